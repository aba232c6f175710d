// User classes of the ttreegen TTree fixtures (split_class, unsplit_class, clonesarray), and the
// dictionaries of the STL containers of the stl_containers case.
// Compiled with ACLiC into a dictionary library (tests/ttreegen.py: load_user_classes) that the writers, the
// importer and the oracle load: interpreted classes are not enough (a member struct without ClassDef is not
// streamed, std::vector<TGPlain> needs a compiled collection proxy).
#ifndef TTREEGEN_CLASSES_HXX
#define TTREEGEN_CLASSES_HXX
#include <Rtypes.h>
#include <TObject.h>

#include <array>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

struct TGNested {
   Int_t a = 0;
   Double_t b = 0;
   std::vector<Short_t> v;
};

/// With ClassDef (class version 3).
class TGEvent {
public:
   Int_t i = 0;
   UInt_t u = 0;
   Long64_t l = 0;
   Float_t x = 0;
   Double_t d = 0;
   Bool_t flag = false;
   Char_t c = 0;
   std::vector<float> vf;
   std::string s;
   std::vector<std::string> vs;
   Float_t f[3] = {0, 0, 0};
   TGNested nested;
   virtual ~TGEvent() = default;
   ClassDef(TGEvent, 3)
};

/// The same members without ClassDef.
struct TGPlain {
   Int_t i = 0;
   UInt_t u = 0;
   Long64_t l = 0;
   Float_t x = 0;
   Double_t d = 0;
   Bool_t flag = false;
   Char_t c = 0;
   std::vector<float> vf;
   std::string s;
   std::vector<std::string> vs;
   Float_t f[3] = {0, 0, 0};
   TGNested nested;
};

/// A TObject for the TClonesArray case.
class TGHit : public TObject {
public:
   Float_t x = 0;
   Int_t id = 0;
   ClassDefOverride(TGHit, 1)
};

/// Two levels of bases, TObject at the root (the tobject_classes case).
class TGTrack : public TGHit {
public:
   Double_t pt = 0;
   std::vector<Float_t> w;
   ClassDefOverride(TGTrack, 2)
};

/// A base class that is no TObject.
struct TGBase {
   Short_t b = 0;
   std::string label;
};

/// A class deriving from a plain base, with ClassDef.
class TGDerived : public TGBase {
public:
   Float_t y = 0;
   virtual ~TGDerived() = default;
   ClassDef(TGDerived, 4)
};

#ifdef __ROOTCLING__
#pragma link C++ class TGNested+;
#pragma link C++ class TGEvent+;
#pragma link C++ class TGPlain+;
#pragma link C++ class TGHit+;
#pragma link C++ class TGTrack+;
#pragma link C++ class TGBase+;
#pragma link C++ class TGDerived+;
#pragma link C++ class std::vector<TGHit>+;
#pragma link C++ class std::vector<TGTrack>+;
#pragma link C++ class std::vector<TGDerived>+;
#pragma link C++ class std::vector<TGPlain>+;
#pragma link C++ class std::set<int>+;
#pragma link C++ class std::multiset<int>+;
#pragma link C++ class std::unordered_set<int>+;
#pragma link C++ class std::set<std::string>+;
#pragma link C++ class std::vector<std::set<int>>+;
#pragma link C++ class std::pair<int, float>+;
#pragma link C++ class std::map<int, float>+;
#pragma link C++ class std::multimap<int, double>+;
#pragma link C++ class std::unordered_map<int, float>+;
#pragma link C++ class std::map<std::string, std::vector<float>>+;
#pragma link C++ class std::map<int, std::set<short>>+;
#pragma link C++ class std::vector<std::map<int, float>>+;
#pragma link C++ class std::map<int, std::string>+;
#endif
#endif
