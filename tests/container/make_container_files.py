#!/usr/bin/env python3
"""Writes small ROOT files with ROOT itself (PyROOT, ROOT >= 6.34) for the container tests.

Usage: make_container_files.py OUTDIR

Files written:
  subdirs.root          RNTuples in the top directory, in "a" and in "a/b", beside TH1Fs,
                        an empty directory "c", and a histogram written twice (two cycles).
  multikey_simple.root  RNTupleWriter.Recreate with MaxKeySize 1024 and no compression:
                        header, footer and pages larger than 1024 bytes are multi-key blobs.
  multikey_tfile.root   the same through RNTupleWriter.Append into a TFile directory "d".
"""

import os
import sys

import ROOT


def fill_simple(writer, n, value_of):
    entry = writer.CreateEntry()
    for i in range(n):
        for name, v in value_of(i).items():
            entry[name] = v
        writer.Fill(entry)


def simple_model(field):
    model = ROOT.RNTupleModel.Create()
    model.MakeField["float"](field)
    return model


def make_subdirs(path):
    f = ROOT.TFile.Open(path, "RECREATE")
    h = ROOT.TH1F("h", "a histogram", 10, 0.0, 1.0)
    h.Write()
    h.Fill(0.5)
    h.Write()  # second cycle of "h"
    a = f.mkdir("a")
    b = a.mkdir("b")
    f.mkdir("c")
    a.cd()
    ROOT.TH1F("ha", "another histogram", 5, 0.0, 1.0).Write()
    f.cd()
    for directory, name, n in ((f, "top", 3), (a, "nt", 4), (b, "nt", 5), (b, "nt2", 6)):
        writer = ROOT.RNTupleWriter.Append(simple_model("x"), name, directory)
        fill_simple(writer, n, lambda i: {"x": float(i)})
        writer.CommitDataset()
    f.Close()


def wide_model():
    model = ROOT.RNTupleModel.Create()
    for i in range(80):
        model.MakeField["float"](f"field_with_a_long_name_{i:03d}")
    model.MakeField["std::vector<double>"]("v")
    return model


def fill_wide(writer):
    entry = writer.CreateEntry()
    for i in range(300):
        entry["field_with_a_long_name_000"] = float(i)
        vec = entry["v"]
        vec.clear()
        for j in range(50):
            vec.push_back(i * 0.5 + j)
        writer.Fill(entry)
        if i % 30 == 29:
            writer.CommitCluster()


def options():
    opts = ROOT.RNTupleWriteOptions()
    opts.SetCompression(0)
    ROOT.ROOT.Internal.RNTupleWriteOptionsManip.SetMaxKeySize(opts, 1024)
    return opts


def make_multikey_simple(path):
    writer = ROOT.RNTupleWriter.Recreate(wide_model(), "wide", path, options())
    fill_wide(writer)
    writer.CommitDataset()


def make_multikey_tfile(path):
    f = ROOT.TFile.Open(path, "RECREATE")
    d = f.mkdir("d")
    writer = ROOT.RNTupleWriter.Append(wide_model(), "wide", d, options())
    fill_wide(writer)
    writer.CommitDataset()
    f.Close()


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    make_subdirs(os.path.join(out, "subdirs.root"))
    make_multikey_simple(os.path.join(out, "multikey_simple.root"))
    make_multikey_tfile(os.path.join(out, "multikey_tfile.root"))


if __name__ == "__main__":
    main()
