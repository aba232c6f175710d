// User classes of the ttreegen TTree fixtures (split_class, unsplit_class, clonesarray, stl_array_bitset), and
// the dictionaries of the STL containers of the stl_containers and stl_array_bitset cases.
// Compiled with ACLiC into a dictionary library (tests/ttreegen.py: load_user_classes) that the writers, the
// importer and the oracle load: interpreted classes are not enough (a member struct without ClassDef is not
// streamed, std::vector<TGPlain> needs a compiled collection proxy).
#ifndef TTREEGEN_CLASSES_HXX
#define TTREEGEN_CLASSES_HXX
#include <Rtypes.h>
#include <TBuffer.h>
#include <TLorentzVector.h>
#include <TObject.h>
#include <TString.h>

#include <array>
#include <bitset>
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

/// The data members of TGEvent and TGPlain: one class with and without ClassDef, whose members must stay the
/// same (a macro: a common base would change both classes' layout on file).
#define TG_EVENT_MEMBERS \
   Int_t i = 0; \
   UInt_t u = 0; \
   Long64_t l = 0; \
   Float_t x = 0; \
   Double_t d = 0; \
   Bool_t flag = false; \
   Char_t c = 0; \
   std::vector<float> vf; \
   std::string s; \
   std::vector<std::string> vs; \
   Float_t f[3] = {0, 0, 0}; \
   TGNested nested;

/// With ClassDef (class version 3).
class TGEvent {
public:
   TG_EVENT_MEMBERS
   virtual ~TGEvent() = default;
   ClassDef(TGEvent, 3)
};

/// The same members without ClassDef.
struct TGPlain {
   TG_EVENT_MEMBERS
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

/// A counted C array member (TStreamerBasicPointer): RNTuple has no field for it, so ROOT stores the class
/// only whole, in a streamer field.
class TGCounted {
public:
   Int_t fN = 0;
   Short_t *fSlice = nullptr; //[fN]
   Double_t fE = 0;
   TGCounted() = default;
   TGCounted(const TGCounted &o) : fN(o.fN), fSlice(o.fN ? new Short_t[o.fN] : nullptr), fE(o.fE)
   {
      for (Int_t k = 0; k < fN; ++k)
         fSlice[k] = o.fSlice[k];
   }
   TGCounted &operator=(const TGCounted &o)
   {
      if (this != &o) {
         Set(o.fN, o.fSlice);
         fE = o.fE;
      }
      return *this;
   }
   virtual ~TGCounted() { delete[] fSlice; }
   void Set(Int_t n, const Short_t *values)
   {
      delete[] fSlice;
      fN = n;
      fSlice = n ? new Short_t[n] : nullptr;
      for (Int_t k = 0; k < n; ++k)
         fSlice[k] = values[k];
   }
   ClassDef(TGCounted, 2)
};

/// A class with a streamer of its own (no streamer info drives it): its bytes mean what its Streamer says.
class TGCustom {
public:
   Float_t a = 0;
   Int_t b = 0;
   virtual ~TGCustom() = default;
   ClassDef(TGCustom, 1)
};

inline void TGCustom::Streamer(TBuffer &buf)
{
   // A packed layout of its own: b first, then a, behind a byte count and version.
   if (buf.IsReading()) {
      UInt_t start, count;
      buf.ReadVersion(&start, &count);
      buf >> b;
      buf >> a;
      buf.CheckByteCount(start, count, TGCustom::IsA());
   } else {
      UInt_t at = buf.WriteVersion(TGCustom::IsA(), kTRUE);
      buf << b;
      buf << a;
      buf.SetByteCount(at, kTRUE);
   }
}

// An AOD-like event (tests/ttreegen.py case aod_like, the --split-policy auto fixture): CMS
// EDM-style products of nested classes, large collections next to small per-event objects.
struct AODTrack {
   Float_t pt = 0, eta = 0, phi = 0, chi2 = 0;
   Short_t charge = 0;
   UChar_t quality = 0;
   std::vector<float> covariance;
   std::vector<int> hits;
};

struct AODVertex {
   Float_t x = 0, y = 0, z = 0, chi2 = 0;
   Int_t ndof = 0;
   std::vector<unsigned short> tracks;
};

/// Per-event bookkeeping (edm::EventAuxiliary): mostly constant or slowly changing.
class AODEventAux {
public:
   UInt_t run = 0, lumi = 0;
   ULong64_t event = 0, time = 0;
   Int_t bunchCrossing = 0, orbit = 0, storeNumber = 0;
   Bool_t isRealData = false;
   std::string processGuid;
   ClassDef(AODEventAux, 2)
};

struct AODTriggerResults {
   std::vector<unsigned char> states;
   std::string process;
   UInt_t parameterSetIdHigh = 0, parameterSetIdLow = 0;
};

struct AODMET {
   Float_t pt = 0, phi = 0, sumEt = 0, significance = 0;
   Float_t covariance[4] = {0, 0, 0, 0};
};

/// std::array and std::bitset members (the stl_array_bitset case), without ClassDef: split, unsplit and in
/// vectors. ROOT streams a std::array member as a fixed array of its values, a std::bitset as an STL
/// collection of bools.
struct TGArrBits {
   Int_t id = 0;
   std::array<Double_t, 3> pos{};
   std::bitset<16> flags;
   std::array<Int_t, 2> idx{};
};

/// With ClassDef (version 2): std::array and std::bitset members and collections of them (only unsplit: ROOT
/// 6.40 writes a split std::vector<std::array> member without its values).
class TGArrBitsC {
public:
   std::array<Float_t, 2> a{};
   std::bitset<5> b;
   std::vector<std::array<Short_t, 2>> va;
   std::vector<std::bitset<3>> vb;
   virtual ~TGArrBitsC() = default;
   ClassDef(TGArrBitsC, 2)
};

#ifdef __ROOTCLING__
#pragma link C++ class TGNested+;
#pragma link C++ class TGEvent+;
#pragma link C++ class TGPlain+;
#pragma link C++ class TGHit+;
#pragma link C++ class TGTrack+;
#pragma link C++ class TGBase+;
#pragma link C++ class TGDerived+;
#pragma link C++ class TGCounted+;
#pragma link C++ class TGCustom-;
#pragma link C++ class std::vector<TGCounted>+;
#pragma link C++ class std::vector<TLorentzVector>+;
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
#pragma link C++ class std::map<std::string, TString>+;
#pragma link C++ class std::vector<TString>+;
#pragma link C++ class AODTrack+;
#pragma link C++ class AODVertex+;
#pragma link C++ class AODEventAux+;
#pragma link C++ class AODTriggerResults+;
#pragma link C++ class AODMET+;
#pragma link C++ class std::vector<AODTrack>+;
#pragma link C++ class std::vector<AODVertex>+;
#pragma link C++ class TGArrBits+;
#pragma link C++ class TGArrBitsC+;
#pragma link C++ class std::vector<TGArrBits>+;
#pragma link C++ class std::vector<TGArrBitsC>+;
#pragma link C++ class std::bitset<3>+;
#pragma link C++ class std::bitset<4>+;
#pragma link C++ class std::bitset<5>+;
#pragma link C++ class std::bitset<8>+;
#pragma link C++ class std::bitset<12>+;
#pragma link C++ class std::bitset<16>+;
#pragma link C++ class std::bitset<20>+;
#pragma link C++ class std::vector<std::array<float, 3>>+;
#pragma link C++ class std::vector<std::array<short, 2>>+;
#pragma link C++ class std::vector<std::vector<std::array<short, 2>>>+;
#pragma link C++ class std::vector<std::bitset<3>>+;
#pragma link C++ class std::vector<std::bitset<4>>+;
#pragma link C++ class std::vector<std::bitset<8>>+;
#pragma link C++ class std::vector<std::vector<std::bitset<4>>>+;
#pragma link C++ class std::map<int, std::array<int, 2>>+;
#pragma link C++ class std::map<int, std::bitset<12>>+;
#pragma link C++ class std::set<std::array<int, 2>>+;
#endif
#endif
