// Writes TTree test files with ROOT 6.40 for the TTree -> RNTuple converter tests.
// Declared into cling by tests/ttreegen.py (after tests/cxx/ttreegen_classes.hxx).
//
// Every value is a deterministic function of (entry number, salt), mirrored in Python by
// ttreegen.mix / int_value / float_value / double_value / length so tests can recompute them.
// Baskets are kept small (a few hundred bytes) so that every branch has several baskets;
// auto-flush every few hundred entries makes baskets of different sizes (the last basket of
// each cluster is partial, and ROOT's OptimizeBaskets resizes them after the first cluster).
#include <TBranch.h>
#include <TClonesArray.h>
#include <TDirectory.h>
#include <TFile.h>
#include <TLorentzVector.h>
#include <TString.h>
#include <TTree.h>
#include <TVector3.h>

#include <array>
#include <bitset>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace ttreegen {

/// splitmix64 of (entry, salt): the source of every value.
inline std::uint64_t Mix(std::uint64_t i, std::uint64_t salt)
{
   std::uint64_t z = i * 0x9E3779B97F4A7C15ULL + salt * 0xD1B54A32D192ED03ULL + 0x632BE59BD9B4E019ULL;
   z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
   z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
   return z ^ (z >> 31);
}

/// An integer of type T: min, max, 0 every 61 entries, else the low bits of Mix (two's complement).
template <typename T>
T IntValue(std::uint64_t i, std::uint64_t salt)
{
   switch (i % 61) {
   case 0: return std::numeric_limits<T>::min();
   case 1: return std::numeric_limits<T>::max();
   case 2: return T(0);
   default: return static_cast<T>(Mix(i, salt));
   }
}

inline bool BoolValue(std::uint64_t i, std::uint64_t salt) { return (Mix(i, salt) >> 7) & 1; }

/// A float exactly representable: a 24-bit signed integer / 1024, with -0, FLT_MAX and a subnormal recurring.
inline float FloatValue(std::uint64_t i, std::uint64_t salt)
{
   switch (i % 61) {
   case 0: return -0.0f;
   case 1: return std::numeric_limits<float>::max();
   case 2: return std::numeric_limits<float>::denorm_min();
   default: return static_cast<float>(static_cast<std::int64_t>(Mix(i, salt) >> 40) - (1LL << 23)) / 1024.0f;
   }
}

/// A double in (-5e5, 5e5) from 53 random bits, with -0, DBL_MAX and a subnormal recurring.
inline double DoubleValue(std::uint64_t i, std::uint64_t salt)
{
   switch (i % 61) {
   case 0: return -0.0;
   case 1: return std::numeric_limits<double>::max();
   case 2: return std::numeric_limits<double>::denorm_min();
   default: return (static_cast<double>(Mix(i, salt) >> 11) * 0x1p-53 - 0.5) * 1e6;
   }
}

/// A value in [0, 1] (for Double32_t / Float16_t with a range).
inline double UnitValue(std::uint64_t i, std::uint64_t salt)
{
   return static_cast<double>(Mix(i, salt) >> 11) * 0x1p-53;
}

/// A collection length in [0, max]; 0 every 7 entries.
inline int Length(std::uint64_t i, std::uint64_t salt, int max)
{
   if (i % 7 == 0)
      return 0;
   return static_cast<int>(Mix(i, salt + 1000) % static_cast<std::uint64_t>(max + 1));
}

/// A printable ASCII string of Length(i, salt, maxLen) characters (long ones every 50 entries).
inline std::string StringValue(std::uint64_t i, std::uint64_t salt, int maxLen = 12)
{
   static const char kAlphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-+/.,;:";
   int n = Length(i, salt, maxLen);
   if (i % 50 == 3)
      n = 300 + static_cast<int>(i % 17); // longer than 255 characters
   std::string s;
   for (int k = 0; k < n; ++k)
      s += kAlphabet[Mix(i * 1000 + k, salt + 77) % (sizeof(kAlphabet) - 1)];
   return s;
}

/// A new TTree `name` in `dir` with small baskets, flushed every `autoflush` entries.
inline TTree *NewTree(TDirectory *dir, const char *name, Long64_t autoflush)
{
   dir->cd();
   auto *t = new TTree(name, name);
   t->SetAutoFlush(autoflush);
   t->SetAutoSave(0);
   return t;
}

inline std::unique_ptr<TFile> Open(const char *path, int compression)
{
   std::unique_ptr<TFile> f(TFile::Open(path, "RECREATE", "", compression));
   if (!f || f->IsZombie())
      throw std::runtime_error(std::string("cannot create ") + path);
   return f;
}

/// When set, Finish writes the tree as TDirectory::WriteTObject does, without flushing
/// it first: each branch's last basket, still in memory, is kept in the tree's own key
/// (TBranch::fBaskets) instead of a key of its own.
inline bool gKeepLastBaskets = false;

inline void Finish(std::unique_ptr<TFile> &f, TTree *t)
{
   f->cd();
   if (gKeepLastBaskets)
      f->WriteTObject(t);
   else
      t->Write();
   f->Close();
}

constexpr int kBasket = 512; ///< bytes: small baskets -> several per branch

// --- fundamentals ------------------------------------------------------------------------

struct Fundamentals {
   Bool_t o;
   Char_t B;
   UChar_t b;
   Short_t S;
   UShort_t s;
   Int_t I;
   UInt_t i;
   Long64_t L;
   ULong64_t l;
   Float_t F;
   Double_t D;
   Double32_t d32;
   Double32_t d32r;
   Float16_t f16;
   Float16_t f16r;
   Long_t G;
   ULong_t g;
};

inline void FillFundamentals(Fundamentals &v, std::uint64_t e)
{
   v.o = BoolValue(e, 1);
   v.B = IntValue<Char_t>(e, 2);
   v.b = IntValue<UChar_t>(e, 3);
   v.S = IntValue<Short_t>(e, 4);
   v.s = IntValue<UShort_t>(e, 5);
   v.I = IntValue<Int_t>(e, 6);
   v.i = IntValue<UInt_t>(e, 7);
   v.L = IntValue<Long64_t>(e, 8);
   v.l = IntValue<ULong64_t>(e, 9);
   v.F = FloatValue(e, 10);
   v.D = DoubleValue(e, 11);
   v.d32 = (e % 61 == 1) ? 1.5 : DoubleValue(e, 12); // (DBL_MAX does not fit a float)
   v.d32r = UnitValue(e, 13);
   v.f16 = FloatValue(e, 14);
   v.f16r = static_cast<float>(UnitValue(e, 15));
   v.G = IntValue<Long_t>(e, 16);
   v.g = IntValue<ULong_t>(e, 17);
}

void WriteFundamentals(const char *path, Long64_t n, int compression)
{
   auto f = Open(path, compression);
   auto *t = NewTree(f.get(), "t", 700);
   Fundamentals v{};
   t->Branch("o", &v.o, "o/O", kBasket);
   t->Branch("B", &v.B, "B/B", kBasket);
   t->Branch("b", &v.b, "b/b", kBasket);
   t->Branch("S", &v.S, "S/S", kBasket);
   t->Branch("s", &v.s, "s/s", kBasket);
   t->Branch("I", &v.I, "I/I", kBasket);
   t->Branch("i", &v.i, "i/i", kBasket);
   t->Branch("L", &v.L, "L/L", kBasket);
   t->Branch("l", &v.l, "l/l", kBasket);
   t->Branch("F", &v.F, "F/F", kBasket);
   t->Branch("D", &v.D, "D/D", kBasket);
   t->Branch("d32", &v.d32, "d32/d", kBasket);
   t->Branch("d32r", &v.d32r, "d32r/d[0,1,16]", kBasket);
   t->Branch("G", &v.G, "G/G", kBasket);
   t->Branch("g", &v.g, "g/g", kBasket);
   for (Long64_t e = 0; e < n; ++e) {
      FillFundamentals(v, e);
      t->Fill();
   }
   Finish(f, t);
}

/// Float16_t branches (the importer rejects them: "unknown type: Float16_t"), apart from `fundamentals`.
void WriteFloat16(const char *path, Long64_t n, int compression)
{
   auto f = Open(path, compression);
   auto *t = NewTree(f.get(), "t", 700);
   Fundamentals v{};
   t->Branch("I", &v.I, "I/I", kBasket);
   t->Branch("f16", &v.f16, "f16/f", kBasket);
   t->Branch("f16r", &v.f16r, "f16r/f[0,1,12]", kBasket);
   for (Long64_t e = 0; e < n; ++e) {
      FillFundamentals(v, e);
      t->Fill();
   }
   Finish(f, t);
}

// --- fixed-size arrays ---------------------------------------------------------------------

void WriteFixedArrays(const char *path, Long64_t n, int compression)
{
   auto f = Open(path, compression);
   auto *t = NewTree(f.get(), "t", 700);
   Float_t x[3];
   Char_t c[4];
   Int_t i2[2][3];
   Double_t d[5];
   t->Branch("x", x, "x[3]/F", kBasket);
   t->Branch("c", c, "c[4]/B", kBasket);
   t->Branch("i", i2, "i[2][3]/I", kBasket);
   t->Branch("d", d, "d[5]/D", kBasket);
   for (Long64_t e = 0; e < n; ++e) {
      for (int k = 0; k < 3; ++k)
         x[k] = FloatValue(e, 100 + k);
      for (int k = 0; k < 4; ++k)
         c[k] = IntValue<Char_t>(e, 110 + k);
      for (int r = 0; r < 2; ++r)
         for (int k = 0; k < 3; ++k)
            i2[r][k] = IntValue<Int_t>(e, 120 + 3 * r + k);
      for (int k = 0; k < 5; ++k)
         d[k] = DoubleValue(e, 130 + k);
      t->Fill();
   }
   Finish(f, t);
}

// --- variable-size arrays with count leaves -------------------------------------------------

/// Branch order: nB, b1, zN (UChar_t count), z1, nA, a1, a2, mS (UShort_t count), m1, a3.
/// Count leaves in branch order nB, zN, nA, mS; in lexicographic order (the importer's) mS, nA, nB, zN.
void WriteCountArrays(const char *path, Long64_t n, int compression)
{
   auto f = Open(path, compression);
   auto *t = NewTree(f.get(), "t", 700);
   constexpr int kMaxA = 6, kMaxB = 4, kMaxZ = 5, kMaxM = 3;
   Int_t nA = 0, nB = 0;
   UChar_t zN = 0;
   UShort_t mS = 0;
   Float_t a1[kMaxA];
   Double_t a2[kMaxA];
   Long64_t a3[kMaxA];
   Int_t b1[kMaxB];
   Short_t z1[kMaxZ];
   Bool_t m1[kMaxM];
   t->Branch("nB", &nB, "nB/I", kBasket);
   t->Branch("b1", b1, "b1[nB]/I", kBasket);
   t->Branch("zN", &zN, "zN/b", kBasket);
   t->Branch("z1", z1, "z1[zN]/S", kBasket);
   t->Branch("nA", &nA, "nA/I", kBasket);
   t->Branch("a1", a1, "a1[nA]/F", kBasket);
   t->Branch("a2", a2, "a2[nA]/D", kBasket);
   t->Branch("mS", &mS, "mS/s", kBasket);
   t->Branch("m1", m1, "m1[mS]/O", kBasket);
   t->Branch("a3", a3, "a3[nA]/L", kBasket);
   for (Long64_t e = 0; e < n; ++e) {
      nA = Length(e, 200, kMaxA);
      nB = Length(e, 201, kMaxB);
      zN = static_cast<UChar_t>(Length(e, 202, kMaxZ));
      mS = static_cast<UShort_t>(Length(e, 203, kMaxM));
      for (int k = 0; k < nA; ++k) {
         a1[k] = FloatValue(e * 16 + k, 210);
         a2[k] = DoubleValue(e * 16 + k, 211);
         a3[k] = IntValue<Long64_t>(e * 16 + k, 212);
      }
      for (int k = 0; k < nB; ++k)
         b1[k] = IntValue<Int_t>(e * 16 + k, 213);
      for (int k = 0; k < zN; ++k)
         z1[k] = IntValue<Short_t>(e * 16 + k, 214);
      for (int k = 0; k < mS; ++k)
         m1[k] = BoolValue(e * 16 + k, 215);
      t->Fill();
   }
   Finish(f, t);
}

// --- leaf lists -------------------------------------------------------------------------------

struct LeafList1 {
   Float_t a;
   Int_t b;
   Double_t c;
};
struct LeafList2 {
   Int_t a;
   Int_t b[2];
};

void WriteLeafList(const char *path, Long64_t n, int compression)
{
   auto f = Open(path, compression);
   auto *t = NewTree(f.get(), "t", 700);
   LeafList1 ll{};
   LeafList2 lm{};
   Int_t x = 0;
   t->Branch("ll", &ll, "a/F:b/I:c/D", kBasket);
   t->Branch("x", &x, "x/I", kBasket);
   t->Branch("lm", &lm, "a/I:b[2]/I", kBasket);
   for (Long64_t e = 0; e < n; ++e) {
      ll.a = FloatValue(e, 300);
      ll.b = IntValue<Int_t>(e, 301);
      ll.c = DoubleValue(e, 302);
      x = IntValue<Int_t>(e, 303);
      lm.a = IntValue<Int_t>(e, 304);
      lm.b[0] = IntValue<Int_t>(e, 305);
      lm.b[1] = IntValue<Int_t>(e, 306);
      t->Fill();
   }
   Finish(f, t);
}

// --- C strings --------------------------------------------------------------------------------

void WriteCString(const char *path, Long64_t n, int compression)
{
   auto f = Open(path, compression);
   auto *t = NewTree(f.get(), "t", 700);
   char s1[512];
   char s2[512];
   Int_t k = 0;
   t->Branch("s1", s1, "s1/C", kBasket);
   t->Branch("k", &k, "k/I", kBasket);
   t->Branch("s2", s2, "s2/C", kBasket);
   for (Long64_t e = 0; e < n; ++e) {
      std::strcpy(s1, StringValue(e, 400).c_str());
      std::strcpy(s2, StringValue(e, 401, 3).c_str());
      k = IntValue<Int_t>(e, 402);
      t->Fill();
   }
   Finish(f, t);
}

// --- STL / TBranchElement branches ----------------------------------------------------------

void WriteStl(const char *path, Long64_t n, int compression)
{
   auto f = Open(path, compression);
   auto *t = NewTree(f.get(), "t", 700);
   auto *vf = new std::vector<float>;
   auto *vi = new std::vector<int>;
   auto *vd = new std::vector<double>;
   auto *vb = new std::vector<bool>;
   auto *vvf = new std::vector<std::vector<float>>;
   auto *str = new std::string;
   auto *vs = new std::vector<std::string>;
   t->Branch("vf", &vf, kBasket);
   t->Branch("vi", &vi, kBasket);
   t->Branch("vd", &vd, kBasket);
   t->Branch("vb", &vb, kBasket);
   t->Branch("vvf", &vvf, kBasket);
   t->Branch("str", &str, kBasket);
   t->Branch("vs", &vs, kBasket);
   for (Long64_t e = 0; e < n; ++e) {
      vf->resize(Length(e, 500, 5));
      for (std::size_t k = 0; k < vf->size(); ++k)
         (*vf)[k] = FloatValue(e * 16 + k, 501);
      vi->resize(Length(e, 502, 5));
      for (std::size_t k = 0; k < vi->size(); ++k)
         (*vi)[k] = IntValue<int>(e * 16 + k, 503);
      vd->resize(Length(e, 504, 4));
      for (std::size_t k = 0; k < vd->size(); ++k)
         (*vd)[k] = DoubleValue(e * 16 + k, 505);
      vb->resize(Length(e, 506, 9));
      for (std::size_t k = 0; k < vb->size(); ++k)
         (*vb)[k] = BoolValue(e * 16 + k, 507);
      vvf->resize(Length(e, 508, 3));
      for (std::size_t k = 0; k < vvf->size(); ++k) {
         (*vvf)[k].resize(Length(e * 16 + k, 509, 3));
         for (std::size_t m = 0; m < (*vvf)[k].size(); ++m)
            (*vvf)[k][m] = FloatValue(e * 256 + k * 16 + m, 510);
      }
      *str = StringValue(e, 511);
      vs->resize(Length(e, 512, 3));
      for (std::size_t k = 0; k < vs->size(); ++k)
         (*vs)[k] = StringValue(e * 16 + k, 513, 6);
      t->Fill();
   }
   Finish(f, t);
}

/// A TString branch (the importer rejects it: "TString cannot be stored natively in RNTuple") and k/I.
/// Every STL container RNTuple maps besides std::vector, as TTree branches: sets (ordered,
/// multi, unordered) of int and string, a vector of sets, a pair (split into first and
/// second), maps (ordered, multi, unordered; split into first and second) of numbers, of
/// vectors and of sets; unsplit (split level 0, streamed member-wise): a map of numbers and
/// one of strings; a vector of maps; and a scalar.
/// TStrings inside STL collections: mst (std::map<std::string, TString>, split), mst0 (the same unsplit,
/// member-wise), vts (std::vector<TString>), scalar k/I.
void WriteStlTString(const char *path, Long64_t n, int compression)
{
   auto f = Open(path, compression);
   auto *t = NewTree(f.get(), "t", 600);
   auto *mst = new std::map<std::string, TString>;
   auto *mst0 = new std::map<std::string, TString>;
   auto *vts = new std::vector<TString>;
   Int_t k = 0;
   t->Branch("mst", &mst, kBasket);
   t->Branch("mst0", &mst0, kBasket, 0);
   t->Branch("vts", &vts, kBasket);
   t->Branch("k", &k, "k/I", kBasket);
   for (Long64_t e = 0; e < n; ++e) {
      mst->clear();
      mst0->clear();
      vts->clear();
      for (int m = 0; m < Length(e, 1100, 4); ++m) {
         (*mst)[StringValue(e * 16 + m, 1101)] = StringValue(e * 16 + m, 1102).c_str();
         (*mst0)[StringValue(e * 16 + m, 1103)] = StringValue(e * 16 + m, 1104).c_str();
         vts->push_back(StringValue(e * 16 + m, 1105).c_str());
      }
      k = IntValue<Int_t>(e, 1106);
      t->Fill();
   }
   Finish(f, t);
}

void WriteStlContainers(const char *path, Long64_t n, int compression)
{
   auto f = Open(path, compression);
   auto *t = NewTree(f.get(), "t", 600);
   auto *si = new std::set<int>;
   auto *msi = new std::multiset<int>;
   auto *usi = new std::unordered_set<int>;
   auto *ss = new std::set<std::string>;
   auto *vsi = new std::vector<std::set<int>>;
   auto *pif = new std::pair<int, float>;
   auto *mif = new std::map<int, float>;
   auto *mmid = new std::multimap<int, double>;
   auto *umif = new std::unordered_map<int, float>;
   auto *msv = new std::map<std::string, std::vector<float>>;
   auto *mis = new std::map<int, std::set<short>>;
   auto *mif0 = new std::map<int, float>;
   auto *mistr0 = new std::map<int, std::string>;
   auto *vmif = new std::vector<std::map<int, float>>;
   Int_t k = 0;
   t->Branch("si", &si, kBasket);
   t->Branch("msi", &msi, kBasket);
   t->Branch("usi", &usi, kBasket);
   t->Branch("ss", &ss, kBasket);
   t->Branch("vsi", &vsi, kBasket);
   t->Branch("pif", &pif, kBasket);
   t->Branch("mif", &mif, kBasket);
   t->Branch("mmid", &mmid, kBasket);
   t->Branch("umif", &umif, kBasket);
   t->Branch("msv", &msv, kBasket);
   t->Branch("mis", &mis, kBasket);
   t->Branch("mif0", &mif0, kBasket, 0);
   t->Branch("mistr0", &mistr0, kBasket, 0);
   t->Branch("vmif", &vmif, kBasket);
   t->Branch("k", &k, "k/I", kBasket);
   for (Long64_t e = 0; e < n; ++e) {
      si->clear(); msi->clear(); usi->clear(); ss->clear(); vsi->clear();
      mif->clear(); mmid->clear(); umif->clear(); msv->clear(); mis->clear();
      mif0->clear(); mistr0->clear(); vmif->clear();
      for (int m = 0; m < Length(e, 800, 5); ++m) {
         si->insert(IntValue<int>(e * 16 + m, 801));
         msi->insert(IntValue<int>(e * 16 + m, 802) % 3); // repeated values
         usi->insert(IntValue<int>(e * 16 + m, 803));
         ss->insert(StringValue(e * 16 + m, 804));
         (*mif)[IntValue<int>(e * 16 + m, 805)] = FloatValue(e * 16 + m, 806);
         mmid->insert({IntValue<int>(e * 16 + m, 807) % 2, DoubleValue(e * 16 + m, 808)}); // repeated keys
         (*umif)[IntValue<int>(e * 16 + m, 809)] = FloatValue(e * 16 + m, 810);
         auto &v = (*msv)[StringValue(e * 16 + m, 811)];
         v.resize(Length(e * 16 + m, 812, 3));
         for (std::size_t q = 0; q < v.size(); ++q)
            v[q] = FloatValue(e * 256 + m * 16 + q, 813);
         auto &s = (*mis)[IntValue<int>(e * 16 + m, 814)];
         for (int q = 0; q < Length(e * 16 + m, 815, 3); ++q)
            s.insert(IntValue<short>(e * 256 + m * 16 + q, 816));
         (*mif0)[IntValue<int>(e * 16 + m, 823)] = FloatValue(e * 16 + m, 824);
         (*mistr0)[IntValue<int>(e * 16 + m, 825)] = StringValue(e * 16 + m, 826);
      }
      vmif->resize(Length(e, 827, 3));
      for (std::size_t m = 0; m < vmif->size(); ++m)
         for (int q = 0; q < Length(e * 16 + m, 828, 3); ++q)
            (*vmif)[m][IntValue<int>(e * 256 + m * 16 + q, 829)] = FloatValue(e * 256 + m * 16 + q, 830);
      vsi->resize(Length(e, 817, 3));
      for (std::size_t m = 0; m < vsi->size(); ++m)
         for (int q = 0; q < Length(e * 16 + m, 818, 4); ++q)
            (*vsi)[m].insert(IntValue<int>(e * 256 + m * 16 + q, 819));
      *pif = {IntValue<int>(e, 820), FloatValue(e, 821)};
      k = IntValue<Int_t>(e, 822);
      t->Fill();
   }
   Finish(f, t);
}

void WriteTString(const char *path, Long64_t n, int compression)
{
   auto f = Open(path, compression);
   auto *t = NewTree(f.get(), "t", 700);
   auto *ts = new TString;
   Int_t k = 0;
   t->Branch("k", &k, "k/I", kBasket);
   t->Branch("ts", &ts, kBasket);
   for (Long64_t e = 0; e < n; ++e) {
      k = IntValue<Int_t>(e, 520);
      *ts = StringValue(e, 514).c_str();
      t->Fill();
   }
   Finish(f, t);
}

/// A top-level std::array<float,3> branch (ROOT 6.40 writes it with "Could not find the real data member
/// '_M_elems[3]'" and RDataFrame cannot read it back), a split std::vector<std::array<float,3>> (the same
/// error: its element branch holds no values, ROOT reads zeros) and a scalar k/I.
void WriteStlArray(const char *path, Long64_t n, int compression)
{
   auto f = Open(path, compression);
   auto *t = NewTree(f.get(), "t", 700);
   auto *arr = new std::array<float, 3>;
   auto *varr = new std::vector<std::array<float, 3>>;
   Int_t k = 0;
   t->Branch("k", &k, "k/I", kBasket);
   t->Branch("arr", &arr, kBasket);
   t->Branch("varr", &varr, kBasket, 99);
   for (Long64_t e = 0; e < n; ++e) {
      k = IntValue<Int_t>(e, 520);
      for (int m = 0; m < 3; ++m)
         (*arr)[m] = FloatValue(e, 515 + m);
      varr->resize(Length(e, 521, 3));
      for (std::size_t m = 0; m < varr->size(); ++m)
         for (int q = 0; q < 3; ++q)
            (*varr)[m][q] = FloatValue(e * 16 + m, 522 + q);
      t->Fill();
   }
   Finish(f, t);
}

/// A std::bitset<N> of IntValue's low N bits.
template <std::size_t N>
std::bitset<N> BitsValue(std::uint64_t i, std::uint64_t salt)
{
   return std::bitset<N>(IntValue<std::uint64_t>(i, salt));
}

inline void FillArrBits(TGArrBits &x, std::uint64_t e, std::uint64_t salt)
{
   x.id = IntValue<Int_t>(e, salt);
   for (int k = 0; k < 3; ++k)
      x.pos[k] = DoubleValue(e * 16 + k, salt + 1);
   x.flags = BitsValue<16>(e, salt + 2);
   for (int k = 0; k < 2; ++k)
      x.idx[k] = IntValue<Int_t>(e * 16 + k, salt + 3);
}

inline void FillArrBitsC(TGArrBitsC &x, std::uint64_t e, std::uint64_t salt)
{
   for (int k = 0; k < 2; ++k)
      x.a[k] = FloatValue(e * 16 + k, salt);
   x.b = BitsValue<5>(e, salt + 1);
   x.va.resize(Length(e, salt + 2, 3));
   for (std::size_t k = 0; k < x.va.size(); ++k)
      x.va[k] = {IntValue<Short_t>(e * 16 + k, salt + 3), IntValue<Short_t>(e * 16 + k, salt + 4)};
   x.vb.resize(Length(e, salt + 5, 3));
   for (std::size_t k = 0; k < x.vb.size(); ++k)
      x.vb[k] = BitsValue<3>(e * 16 + k, salt + 6);
}

/// std::array and std::bitset wherever they occur in TBranchElement branches: as collection items
/// (vaf: std::vector<std::array<float,3>>, unsplit, member-wise; vbs: std::vector<std::bitset<8>>; sai:
/// std::set<std::array<int,2>>, unsplit), as map values (miai: std::map<int,std::array<int,2>> split, miai0
/// unsplit; mibs: std::map<int,std::bitset<12>> split, mibs0 unsplit), nested (vvas:
/// std::vector<std::vector<std::array<short,2>>>, vvbs: std::vector<std::vector<std::bitset<4>>>), a whole
/// std::bitset<20> (bs), class members (ab: TGArrBits split, ab0 unsplit, vab: std::vector<TGArrBits> split,
/// vab0 unsplit; abc0: TGArrBitsC unsplit, vabc0: std::vector<TGArrBitsC> unsplit) and a scalar k/I. (A split
/// std::vector or std::set of std::array is left out: ROOT 6.40 writes no values for it.)
void WriteStlArrayBitset(const char *path, Long64_t n, int compression)
{
   auto f = Open(path, compression);
   auto *t = NewTree(f.get(), "t", 500);
   auto *vaf = new std::vector<std::array<float, 3>>;
   auto *vbs = new std::vector<std::bitset<8>>;
   auto *sai = new std::set<std::array<int, 2>>;
   auto *miai = new std::map<int, std::array<int, 2>>;
   auto *miai0 = new std::map<int, std::array<int, 2>>;
   auto *mibs = new std::map<int, std::bitset<12>>;
   auto *mibs0 = new std::map<int, std::bitset<12>>;
   auto *vvas = new std::vector<std::vector<std::array<short, 2>>>;
   auto *vvbs = new std::vector<std::vector<std::bitset<4>>>;
   auto *bs = new std::bitset<20>;
   auto *ab = new TGArrBits;
   auto *ab0 = new TGArrBits;
   auto *vab = new std::vector<TGArrBits>;
   auto *vab0 = new std::vector<TGArrBits>;
   auto *abc0 = new TGArrBitsC;
   auto *vabc0 = new std::vector<TGArrBitsC>;
   Int_t k = 0;
   t->Branch("vaf", &vaf, kBasket, 0);
   t->Branch("vbs", &vbs, kBasket);
   t->Branch("sai", &sai, kBasket, 0);
   t->Branch("miai", &miai, kBasket);
   t->Branch("miai0", &miai0, kBasket, 0);
   t->Branch("mibs", &mibs, kBasket);
   t->Branch("mibs0", &mibs0, kBasket, 0);
   t->Branch("vvas", &vvas, kBasket);
   t->Branch("vvbs", &vvbs, kBasket);
   t->Branch("bs", &bs, kBasket);
   t->Branch("ab", &ab, kBasket, 99);
   t->Branch("ab0", &ab0, kBasket, 0);
   t->Branch("vab", &vab, kBasket, 99);
   t->Branch("vab0", &vab0, kBasket, 0);
   t->Branch("abc0", &abc0, kBasket, 0);
   t->Branch("vabc0", &vabc0, kBasket, 0);
   t->Branch("k", &k, "k/I", kBasket);
   for (Long64_t e = 0; e < n; ++e) {
      vaf->resize(Length(e, 1200, 3));
      for (std::size_t m = 0; m < vaf->size(); ++m)
         for (int q = 0; q < 3; ++q)
            (*vaf)[m][q] = FloatValue(e * 256 + m * 16 + q, 1201);
      vbs->resize(Length(e, 1202, 4));
      for (std::size_t m = 0; m < vbs->size(); ++m)
         (*vbs)[m] = BitsValue<8>(e * 16 + m, 1203);
      sai->clear();
      miai->clear();
      miai0->clear();
      mibs->clear();
      mibs0->clear();
      for (int m = 0; m < Length(e, 1204, 4); ++m) {
         sai->insert({IntValue<int>(e * 16 + m, 1205) % 3, IntValue<int>(e * 16 + m, 1206)});
         (*miai)[IntValue<int>(e * 16 + m, 1207)] = {IntValue<int>(e * 16 + m, 1208), IntValue<int>(e * 16 + m, 1209)};
         (*miai0)[IntValue<int>(e * 16 + m, 1210)] = {IntValue<int>(e * 16 + m, 1211), IntValue<int>(e * 16 + m, 1212)};
         (*mibs)[IntValue<int>(e * 16 + m, 1213)] = BitsValue<12>(e * 16 + m, 1214);
         (*mibs0)[IntValue<int>(e * 16 + m, 1215)] = BitsValue<12>(e * 16 + m, 1216);
      }
      vvas->resize(Length(e, 1217, 3));
      for (std::size_t m = 0; m < vvas->size(); ++m) {
         (*vvas)[m].resize(Length(e * 16 + m, 1218, 3));
         for (std::size_t q = 0; q < (*vvas)[m].size(); ++q)
            (*vvas)[m][q] = {IntValue<short>(e * 256 + m * 16 + q, 1219), IntValue<short>(e * 256 + m * 16 + q, 1220)};
      }
      vvbs->resize(Length(e, 1221, 3));
      for (std::size_t m = 0; m < vvbs->size(); ++m) {
         (*vvbs)[m].resize(Length(e * 16 + m, 1222, 3));
         for (std::size_t q = 0; q < (*vvbs)[m].size(); ++q)
            (*vvbs)[m][q] = BitsValue<4>(e * 256 + m * 16 + q, 1223);
      }
      *bs = BitsValue<20>(e, 1224);
      FillArrBits(*ab, e, 1230);
      FillArrBits(*ab0, e, 1240);
      vab->resize(Length(e, 1250, 3));
      for (std::size_t m = 0; m < vab->size(); ++m)
         FillArrBits((*vab)[m], e * 16 + m, 1251);
      vab0->resize(Length(e, 1260, 3));
      for (std::size_t m = 0; m < vab0->size(); ++m)
         FillArrBits((*vab0)[m], e * 16 + m, 1261);
      FillArrBitsC(*abc0, e, 1270);
      vabc0->resize(Length(e, 1280, 3));
      for (std::size_t m = 0; m < vabc0->size(); ++m)
         FillArrBitsC((*vabc0)[m], e * 16 + m, 1281);
      k = IntValue<Int_t>(e, 1290);
      t->Fill();
   }
   Finish(f, t);
}

// --- user classes (declared in ttreegen_classes.hxx) -----------------------------------------

inline void FillNested(TGNested &n, std::uint64_t e, std::uint64_t salt)
{
   n.a = IntValue<Int_t>(e, salt);
   n.b = DoubleValue(e, salt + 1);
   n.v.resize(Length(e, salt + 2, 3));
   for (std::size_t k = 0; k < n.v.size(); ++k)
      n.v[k] = IntValue<Short_t>(e * 16 + k, salt + 3);
}

template <typename C>
void FillClass(C &c, std::uint64_t e, std::uint64_t salt)
{
   c.i = IntValue<Int_t>(e, salt);
   c.u = IntValue<UInt_t>(e, salt + 1);
   c.l = IntValue<Long64_t>(e, salt + 2);
   c.x = FloatValue(e, salt + 3);
   c.d = DoubleValue(e, salt + 4);
   c.flag = BoolValue(e, salt + 5);
   c.c = IntValue<Char_t>(e, salt + 6);
   c.vf.resize(Length(e, salt + 7, 4));
   for (std::size_t k = 0; k < c.vf.size(); ++k)
      c.vf[k] = FloatValue(e * 16 + k, salt + 8);
   c.s = StringValue(e, salt + 9);
   c.vs.resize(Length(e, salt + 10, 3));
   for (std::size_t k = 0; k < c.vs.size(); ++k)
      c.vs[k] = StringValue(e * 16 + k, salt + 11, 5);
   for (int k = 0; k < 3; ++k)
      c.f[k] = FloatValue(e, salt + 12 + k);
   FillNested(c.nested, e, salt + 20);
}

/// Branches "ev" (TGEvent, with ClassDef), "pl" (TGPlain, no ClassDef), "vec" (std::vector<TGPlain>) and a
/// scalar "n"; all class branches with the given split level.
void WriteClasses(const char *path, Long64_t n, int compression, int splitlevel)
{
   auto f = Open(path, compression);
   auto *t = NewTree(f.get(), "t", 500);
   auto *ev = new TGEvent;
   auto *pl = new TGPlain;
   auto *vec = new std::vector<TGPlain>;
   Int_t k = 0;
   t->Branch("ev", &ev, kBasket, splitlevel);
   t->Branch("k", &k, "k/I", kBasket);
   t->Branch("pl", &pl, kBasket, splitlevel);
   t->Branch("vec", &vec, kBasket, splitlevel);
   for (Long64_t e = 0; e < n; ++e) {
      FillClass(*ev, e, 600);
      FillClass(*pl, e, 650);
      k = IntValue<Int_t>(e, 640);
      vec->resize(Length(e, 700, 3));
      for (std::size_t m = 0; m < vec->size(); ++m)
         FillClass((*vec)[m], e * 16 + m, 710);
      t->Fill();
   }
   Finish(f, t);
}

/// A TGHit's members, its unique id and a user bit (TObject's fBits bit 14) among them.
void FillHit(TGHit &h, std::uint64_t e, std::uint64_t salt)
{
   h.x = FloatValue(e, salt);
   h.id = IntValue<Int_t>(e, salt + 1);
   h.SetUniqueID(IntValue<UInt_t>(e, salt + 2));
   h.SetBit(BIT(14), BoolValue(e, salt + 3));
}

void FillTrack(TGTrack &t, std::uint64_t e, std::uint64_t salt)
{
   FillHit(t, e, salt);
   t.pt = DoubleValue(e, salt + 4);
   t.w.resize(Length(e, salt + 5, 3));
   for (std::size_t k = 0; k < t.w.size(); ++k)
      t.w[k] = FloatValue(e * 16 + k, salt + 6);
}

void FillDerived(TGDerived &d, std::uint64_t e, std::uint64_t salt)
{
   d.b = IntValue<Short_t>(e, salt);
   d.label = StringValue(e, salt + 1, 4);
   d.y = FloatValue(e, salt + 2);
}

/// Objects ROOT's RNTuple stores only whole (streamer fields): p4 (TLorentzVector), vp4
/// (std::vector<TLorentzVector>), v3 (TVector3, split level 0), counted (TGCounted: a counted C array member),
/// custom (TGCustom: a streamer of its own), ca0 (TClonesArray of TGHit at
/// split level 0), scalar k/I.
void WriteStreamerObjects(const char *path, Long64_t n, int compression)
{
   auto f = Open(path, compression);
   auto *t = NewTree(f.get(), "t", 500);
   auto *p4 = new TLorentzVector;
   auto *vp4 = new std::vector<TLorentzVector>;
   auto *v3 = new TVector3;
   auto *counted = new TGCounted;
   auto *custom = new TGCustom;
   auto *ca0 = new TClonesArray("TGHit", 4);
   auto *counted99 = new TGCounted;
   auto *vcounted = new std::vector<TGCounted>;
   auto *vcounted0 = new std::vector<TGCounted>;
   Int_t k = 0;
   t->Branch("p4", &p4, kBasket, 99);
   t->Branch("vp4", &vp4, kBasket, 99);
   t->Branch("v3", &v3, kBasket, 0);
   t->Branch("k", &k, "k/I", kBasket);
   t->Branch("counted", &counted, kBasket, 0);
   t->Branch("custom", &custom, kBasket, 0);
   t->Branch("ca0", &ca0, kBasket, 0);
   // The counted array split (its member branches joined again), in a split vector, and in
   // a whole vector (streamed member-wise by the TTree, object-wise by the streamer field).
   t->Branch("counted99", &counted99, kBasket, 99);
   t->Branch("vcounted", &vcounted, kBasket, 99);
   t->Branch("vcounted0", &vcounted0, kBasket, 0);
   std::vector<Short_t> slice;
   for (Long64_t e = 0; e < n; ++e) {
      p4->SetPxPyPzE(DoubleValue(e, 1000), DoubleValue(e, 1001), DoubleValue(e, 1002), DoubleValue(e, 1003));
      vp4->resize(Length(e, 1004, 3));
      for (std::size_t j = 0; j < vp4->size(); ++j)
         (*vp4)[j].SetPtEtaPhiM(FloatValue(e * 16 + j, 1005), FloatValue(e * 16 + j, 1006), 0.5, 0.1);
      v3->SetXYZ(DoubleValue(e, 1007), DoubleValue(e, 1008), DoubleValue(e, 1009));
      k = IntValue<Int_t>(e, 1010);
      slice.resize(Length(e, 1011, 5));
      for (std::size_t j = 0; j < slice.size(); ++j)
         slice[j] = IntValue<Short_t>(e * 16 + j, 1012);
      counted->Set(slice.size(), slice.data());
      counted->fE = DoubleValue(e, 1013);
      custom->a = FloatValue(e, 1016);
      custom->b = IntValue<Int_t>(e, 1017);
      ca0->Clear();
      const int m = Length(e, 1018, 3);
      for (int j = 0; j < m; ++j)
         FillHit(*static_cast<TGHit *>(ca0->ConstructedAt(j)), e * 16 + j, 1019);
      *counted99 = *counted;
      counted99->fE = DoubleValue(e, 1020);
      vcounted->resize(Length(e, 1021, 3));
      for (std::size_t j = 0; j < vcounted->size(); ++j) {
         slice.resize(Length(e * 16 + j, 1022, 4));
         for (std::size_t m = 0; m < slice.size(); ++m)
            slice[m] = IntValue<Short_t>(e * 256 + j * 16 + m, 1023);
         (*vcounted)[j].Set(slice.size(), slice.data());
         (*vcounted)[j].fE = DoubleValue(e * 16 + j, 1024);
      }
      *vcounted0 = *vcounted;
      t->Fill();
   }
   Finish(f, t);
}

/// A TClonesArray of TGHit (a TObject) next to a scalar.
void WriteClonesArray(const char *path, Long64_t n, int compression)
{
   auto f = Open(path, compression);
   auto *t = NewTree(f.get(), "t", 500);
   auto *ca = new TClonesArray("TGHit", 8);
   Int_t k = 0;
   t->Branch("k", &k, "k/I", kBasket);
   t->Branch("hits", &ca, kBasket, 99);
   for (Long64_t e = 0; e < n; ++e) {
      k = IntValue<Int_t>(e, 800);
      ca->Clear();
      const int m = Length(e, 801, 4);
      for (int j = 0; j < m; ++j) {
         auto *h = static_cast<TGHit *>(ca->ConstructedAt(j));
         FillHit(*h, e * 16 + j, 802);
      }
      t->Fill();
   }
   Finish(f, t);
}

/// TObject-derived classes and a class with a plain base, split and unsplit: hit (TGHit, split), hit0
/// (TGHit, unsplit), track (TGTrack: TGHit: TObject, split), vhit (std::vector<TGHit>, split), vtrack0
/// (std::vector<TGTrack>, unsplit), der (TGDerived: TGBase, split), vder0 (std::vector<TGDerived>,
/// unsplit), scalar k/I.
void WriteTObjectClasses(const char *path, Long64_t n, int compression)
{
   auto f = Open(path, compression);
   auto *t = NewTree(f.get(), "t", 500);
   auto *hit = new TGHit;
   auto *hit0 = new TGHit;
   auto *track = new TGTrack;
   auto *vhit = new std::vector<TGHit>;
   auto *vtrack0 = new std::vector<TGTrack>;
   auto *der = new TGDerived;
   auto *vder0 = new std::vector<TGDerived>;
   Int_t k = 0;
   t->Branch("hit", &hit, kBasket, 99);
   t->Branch("hit0", &hit0, kBasket, 0);
   t->Branch("track", &track, kBasket, 99);
   t->Branch("k", &k, "k/I", kBasket);
   t->Branch("vhit", &vhit, kBasket, 99);
   t->Branch("vtrack0", &vtrack0, kBasket, 0);
   t->Branch("der", &der, kBasket, 99);
   t->Branch("vder0", &vder0, kBasket, 0);
   for (Long64_t e = 0; e < n; ++e) {
      FillHit(*hit, e, 900);
      FillHit(*hit0, e, 910);
      FillTrack(*track, e, 920);
      k = IntValue<Int_t>(e, 930);
      vhit->resize(Length(e, 931, 4));
      for (std::size_t j = 0; j < vhit->size(); ++j)
         FillHit((*vhit)[j], e * 16 + j, 940);
      vtrack0->resize(Length(e, 932, 3));
      for (std::size_t j = 0; j < vtrack0->size(); ++j)
         FillTrack((*vtrack0)[j], e * 16 + j, 950);
      FillDerived(*der, e, 960);
      vder0->resize(Length(e, 933, 3));
      for (std::size_t j = 0; j < vder0->size(); ++j)
         FillDerived((*vder0)[j], e * 16 + j, 970);
      t->Fill();
   }
   Finish(f, t);
}

/// An AOD-like event, all products split (99, as CMSSW writes them): tracks
/// (std::vector<AODTrack>), vertices (std::vector<AODVertex>), aux (AODEventAux), trigger
/// (AODTriggerResults), met (AODMET). Values physics-like (momenta falling, angles in range,
/// bookkeeping constant or counting up), so that the two forms compress as real data does.
void WriteAodLike(const char *path, Long64_t n, int compression)
{
   auto f = Open(path, compression);
   auto *t = NewTree(f.get(), "t", 500);
   auto *tracks = new std::vector<AODTrack>;
   auto *vertices = new std::vector<AODVertex>;
   auto *aux = new AODEventAux;
   auto *trigger = new AODTriggerResults;
   auto *met = new AODMET;
   t->Branch("tracks", &tracks, 32000, 99);
   t->Branch("vertices", &vertices, 32000, 99);
   t->Branch("aux", &aux, 32000, 99);
   t->Branch("trigger", &trigger, 32000, 99);
   t->Branch("met", &met, 32000, 99);
   auto rounded = [](double x, double step) { return static_cast<float>(std::round(x / step) * step); };
   for (Long64_t e = 0; e < n; ++e) {
      tracks->resize(Mix(e, 1) % 40);
      for (std::size_t j = 0; j < tracks->size(); ++j) {
         auto &tr = (*tracks)[j];
         std::uint64_t k = e * 64 + j;
         tr.pt = rounded(1.0 + 20.0 * -std::log(1e-9 + UnitValue(k, 2)), 1.0 / 64);
         tr.eta = rounded(5.0 * UnitValue(k, 3) - 2.5, 1.0 / 512);
         tr.phi = rounded(6.283 * UnitValue(k, 4) - 3.1415, 1.0 / 512);
         tr.chi2 = rounded(3.0 * UnitValue(k, 5), 1.0 / 64);
         tr.charge = BoolValue(k, 6) ? 1 : -1;
         tr.quality = Mix(k, 7) % 4;
         tr.covariance.resize(15);
         for (int c = 0; c < 15; ++c)
            tr.covariance[c] = rounded(1e-3 * UnitValue(k * 16 + c, 8), 1e-6);
         tr.hits.resize(8 + Mix(k, 9) % 8);
         for (std::size_t h = 0; h < tr.hits.size(); ++h)
            tr.hits[h] = static_cast<int>(100000 * j + 37 * h);
      }
      vertices->resize(1 + Mix(e, 10) % 6);
      for (std::size_t j = 0; j < vertices->size(); ++j) {
         auto &v = (*vertices)[j];
         std::uint64_t k = e * 64 + j;
         v.x = rounded(0.01 * UnitValue(k, 11), 1e-5);
         v.y = rounded(0.01 * UnitValue(k, 12), 1e-5);
         v.z = rounded(20.0 * UnitValue(k, 13) - 10.0, 1e-3);
         v.chi2 = rounded(10.0 * UnitValue(k, 14), 1.0 / 64);
         v.ndof = static_cast<int>(Mix(k, 15) % 50);
         v.tracks.resize(Mix(k, 16) % 10);
         for (std::size_t h = 0; h < v.tracks.size(); ++h)
            v.tracks[h] = static_cast<unsigned short>(h * 3 + j);
      }
      aux->run = 325000;
      aux->lumi = 1 + e / 400;
      aux->event = 1000000 + e;
      aux->time = 6800000000000000000ULL + 25 * e;
      aux->bunchCrossing = static_cast<int>(Mix(e, 17) % 3564);
      aux->orbit = static_cast<int>(e * 11);
      aux->storeNumber = 8123;
      aux->isRealData = true;
      aux->processGuid = "3F2504E0-4F89-11D3-9A0C-0305E82C3301";
      trigger->states.assign(300, 0);
      for (std::size_t j = 0; j < trigger->states.size(); ++j)
         trigger->states[j] = (Mix(e * 512 + j, 18) % 10 == 0) ? 1 : 0;
      trigger->process = "HLT";
      trigger->parameterSetIdHigh = 0x9A0C0305;
      trigger->parameterSetIdLow = 0xE82C3301;
      met->pt = rounded(50.0 * UnitValue(e, 19), 1.0 / 64);
      met->phi = rounded(6.283 * UnitValue(e, 20) - 3.1415, 1.0 / 512);
      met->sumEt = rounded(500.0 + 1000.0 * UnitValue(e, 21), 1.0 / 16);
      met->significance = rounded(5.0 * UnitValue(e, 22), 1.0 / 256);
      for (int c = 0; c < 4; ++c)
         met->covariance[c] = rounded(100.0 * UnitValue(e * 4 + c, 23), 1.0 / 16);
      t->Fill();
   }
   Finish(f, t);
}

// --- file layout cases ------------------------------------------------------------------------

/// A small tree with fundamentals, a count array and a vector (compression and layout cases).
struct Small {
   Int_t i;
   Float_t x;
   Double_t d;
   Int_t n;
   Float_t arr[8];
   std::vector<double> *v = nullptr;
};

inline TTree *SmallTree(TDirectory *dir, const char *name, Small &s, Long64_t autoflush)
{
   auto *t = NewTree(dir, name, autoflush);
   t->Branch("i", &s.i, "i/I", kBasket);
   t->Branch("x", &s.x, "x/F", kBasket);
   t->Branch("d", &s.d, "d/D", kBasket);
   t->Branch("n", &s.n, "n/I", kBasket);
   t->Branch("arr", s.arr, "arr[n]/F", kBasket);
   t->Branch("v", &s.v, kBasket);
   return t;
}

inline void FillSmall(Small &s, std::uint64_t e)
{
   s.i = IntValue<Int_t>(e, 900);
   s.x = FloatValue(e, 901);
   s.d = DoubleValue(e, 902);
   s.n = Length(e, 903, 8);
   for (int k = 0; k < s.n; ++k)
      s.arr[k] = FloatValue(e * 16 + k, 904);
   s.v->resize(Length(e, 905, 4));
   for (std::size_t k = 0; k < s.v->size(); ++k)
      (*s.v)[k] = DoubleValue(e * 16 + k, 906);
}

void WriteSmall(const char *path, Long64_t n, int compression)
{
   auto f = Open(path, compression);
   Small s{};
   s.v = new std::vector<double>;
   auto *t = SmallTree(f.get(), "t", s, 700);
   for (Long64_t e = 0; e < n; ++e) {
      FillSmall(s, e);
      t->Fill();
   }
   Finish(f, t);
}

/// The small tree "t" in directory a/b (and nothing at the top level but the directory).
void WriteSubdir(const char *path, Long64_t n, int compression)
{
   auto f = Open(path, compression);
   auto *dir = f->mkdir("a/b");
   if (!dir)
      throw std::runtime_error("mkdir a/b failed");
   Small s{};
   s.v = new std::vector<double>;
   auto *t = SmallTree(dir, "t", s, 700);
   for (Long64_t e = 0; e < n; ++e) {
      FillSmall(s, e);
      t->Fill();
   }
   dir->cd();
   t->Write();
   f->Close();
}

/// The small tree written to the file `nWrites` times while filling (keys t;1 ... t;N, kOverwrite not used, so
/// older cycles stay as keys; TTree::Write keeps the two most recent cycles) and at the end.
void WriteCycles(const char *path, Long64_t n, int compression, int nWrites)
{
   auto f = Open(path, compression);
   Small s{};
   s.v = new std::vector<double>;
   auto *t = SmallTree(f.get(), "t", s, 400);
   const Long64_t every = n / (nWrites + 1);
   for (Long64_t e = 0; e < n; ++e) {
      FillSmall(s, e);
      t->Fill();
      if (every > 0 && (e + 1) % every == 0 && (e + 1) / every <= nWrites) {
         f->cd();
         t->Write();
      }
   }
   f->cd();
   t->Write();
   f->Close();
}

/// One branch "x" (double) and one "y" (int) with hundreds of baskets whose size changes mid-fill.
void WriteManyBaskets(const char *path, Long64_t n, int compression)
{
   auto f = Open(path, compression);
   auto *t = NewTree(f.get(), "t", 0); // no auto-flush, no OptimizeBaskets: the sizes below stay
   Double_t x = 0;
   Int_t y = 0;
   auto *bx = t->Branch("x", &x, "x/D", 128);
   auto *by = t->Branch("y", &y, "y/I", 2000);
   for (Long64_t e = 0; e < n; ++e) {
      if (e == n / 3) {
         bx->SetBasketSize(400);
         by->SetBasketSize(150);
      }
      if (e == 2 * n / 3) {
         bx->SetBasketSize(1000);
         by->SetBasketSize(600);
      }
      x = DoubleValue(e, 1000);
      y = IntValue<Int_t>(e, 1001);
      t->Fill();
   }
   Finish(f, t);
}

} // namespace ttreegen
