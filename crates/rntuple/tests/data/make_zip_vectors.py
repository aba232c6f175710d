"""Regenerates zip_input.bin and zip_root_<algorithm>.bin: a 3000-byte buffer compressed
by ROOT's own R__zipMultipleAlgorithm (level 5), through PyROOT (`pip install root`)."""

import ROOT

ROOT.gInterpreter.Declare(r"""
#include "RZip.h"
#include <vector>
std::vector<int> rzip(int n, int level, int alg) {
  std::vector<char> in(n); for (int i = 0; i < n; ++i) in[i] = (char)(((i/7) ^ (i*31 % 5)) & 0xff);
  int srcsize = n; std::vector<char> out(n + 1000); int tgtsize = out.size(); int irep = 0;
  R__zipMultipleAlgorithm(level, &srcsize, in.data(), &tgtsize, out.data(), &irep,
                          (ROOT::RCompressionSetting::EAlgorithm::EValues)alg);
  std::vector<int> r; for (int i = 0; i < irep; ++i) r.push_back((unsigned char)out[i]);
  return r;
}""")
data = bytes(((i // 7) ^ (i * 31 % 5)) & 0xFF for i in range(3000))
open("zip_input.bin", "wb").write(data)
for alg, name in [(1, "zlib"), (2, "lzma"), (4, "lz4"), (5, "zstd")]:
    open(f"zip_root_{name}.bin", "wb").write(bytes(list(ROOT.rzip(3000, 5, alg))))
