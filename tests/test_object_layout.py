"""RNTuple stored as objects in ROOT's S3 layout ("Mode B"), checked against ROOT 6.40.

ROOT 6.40 has no S3 backend (``ntpl+s3`` is ROOT master's, experimental), so ROOT is the
oracle of the pieces it has, and real S3 servers run the rest:

- **Locators.** ``locator_bytes`` (``crates/rntuple-testkit``) prints our serialized
  locators; they must equal ROOT 6.40's ``RNTupleSerializer::SerializeLocator`` for every
  type and size class (standard and large file locators, object locators type 0x02 with
  32- and 64-bit sizes), and ROOT's ``DeserializeLocator`` must read ours back to the same
  type, size, position and reserved bit. Where ROOT cannot say the same thing (a reserved
  bit on a standard-size file locator, which ROOT drops; reserved values above 1, which
  ROOT refuses) the test says what each side does.
- **Envelopes.** ROOT's deserializer (``DeserializeHeader``, ``DeserializeFooter``,
  ``DeserializePageList`` into an ``RNTupleDescriptorBuilder``) reads the header, footer
  and page-list objects of datasets we wrote (``ntpl+file://DIR/PREFIX``: object ``n`` is
  the file ``DIR/PREFIX.d/n.obj``) to the descriptor of the original file: the same
  fields, columns, clusters and pages, every page and page list behind an object locator
  (``kTypeDAOS``, 0x02) whose object holds its bytes.
- **The JSON anchor** (sorted keys, 2-space indent, no trailing newline; checksum XXH3-64
  of the compact form, recomputed here with ``xxhash``), and the reference vector
  11945761863780303168, which our reader accepts.
- **Conformance round trip** on SeaweedFS (a real S3 server) and on moto: every case but
  ``structure.feature_flag`` goes ``write/<case>.root`` → ``ntpl+s3+http://HOST:PORT/BUCKET/<case>``
  → ``OUT/<case>.root`` with ``rntuple copy``, and ROOT 6.40 reads ``OUT/<case>.root`` to
  exactly ``read/<case>.json`` (``rootdump``'s conventions). ``structure.attributes``: the
  S3 layout has no attribute sets yet, so the copy leaves the set out (and must say so);
  ROOT reads the main RNTuple's entries as in the original. ``structure.feature_flag``:
  the copy fails with a clear error and leaves no object. Credentials come from the
  servers' ``AWS_*`` variables, and once from ROOT's ``S3_ACCESS_KEY``, ``S3_SECRET_KEY``,
  ``S3_REGION`` only.
- **Failures:** a writer killed (SIGKILL) in the middle of a large copy to SeaweedFS leaves
  no anchor (opening says so) and a second copy to the same prefix works; an existing
  dataset is kept without ``--force`` and replaced with it; a missing or corrupt page
  object is an error naming the object; a missing bucket; refused credentials.
- **Python:** ``rntuple.open(URL)`` reads what the local file holds (``arrays``,
  ``iterate``, ``concatenate``, ``rntuple.dask``); ``rntuple.recreate(URL)`` and
  ``rntuple.merge(..., URL)`` write datasets; errors map to ``FileNotFoundError`` and
  ``PermissionError`` subclasses.

ROOT runs in worker processes (this file run as a script with ``--root-worker``, or
``rootdump.run_tasks``), never in the pytest process. Nothing skips: a server that
cannot start fails its tests with the reason.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

import conformance_data  # noqa: E402
from object_store_cli import COMMAND_TIMEOUT, clean_env, printed, rntuple_command, run_cli  # noqa: E402

import rootdump  # noqa: E402

#: Every conformance case but the one ROOT must refuse.
ALL_CASES = conformance_data.cases()
ERROR_CASE = "structure.feature_flag"
ATTRIBUTES_CASE = "structure.attributes"
#: Cases whose round trip ROOT must read to exactly ``read/<case>.json``.
ROUNDTRIP_CASES = [c for c in ALL_CASES if c not in (ERROR_CASE, ATTRIBUTES_CASE)]
#: Cases whose envelopes ROOT's deserializer reads from our objects.
DESCRIPTOR_CASES = [
    "types.vector.fundamental",
    "types.vector.nested",
    "types.RVec.nested",
    "structure.cluster_groups",
    "structure.clusters",
    "compression.algorithms.zstd",
]
#: The S3 servers the round trips run on.
SERVER_KINDS = ("seaweedfs", "moto")
#: The checksum of the reference anchor (ROOT's ``RNTupleAnchorS3`` test vector).
REFERENCE_CHECKSUM = 11945761863780303168


# ----------------------------------------------------------------------------- servers


@dataclass
class Store:
    """A running S3 server (SeaweedFS or moto) and how to reach it."""

    kind: str
    server: Any

    @property
    def port(self) -> int:
        """The S3 endpoint's port."""
        return int(self.server.port)

    @property
    def bucket(self) -> str:
        """The bucket the tests write into."""
        return str(self.server.bucket)

    def url(self, key: str, bucket: str | None = None) -> str:
        """The layout URL of dataset ``key`` (the anchor's key) in ``bucket``."""
        return f"ntpl+s3+http://127.0.0.1:{self.port}/{bucket or self.bucket}/{key}"

    def env(self, **extra: str) -> dict[str, str]:
        """A command's environment: the server's ``AWS_*`` variables, ``extra`` over them."""
        return clean_env({**self.server.env(), **extra})

    def root_env(self) -> dict[str, str]:
        """A command's environment with ROOT's credential variables only (no ``AWS_*``:
        the endpoint is the URL's)."""
        aws = self.server.env()
        return clean_env(
            {
                "S3_ACCESS_KEY": aws["AWS_ACCESS_KEY_ID"],
                "S3_SECRET_KEY": aws["AWS_SECRET_ACCESS_KEY"],
                "S3_REGION": aws["AWS_REGION"],
            }
        )

    def keys(self, prefix: str) -> list[str]:
        """The keys starting with ``prefix``."""
        client = self.server.client()
        keys: list[str] = []
        token: dict[str, str] = {}
        while True:
            page = client.list_objects_v2(Bucket=self.bucket, Prefix=prefix, **token)
            keys.extend(o["Key"] for o in page.get("Contents", []))
            if not page.get("IsTruncated"):
                return keys
            token = {"ContinuationToken": page["NextContinuationToken"]}

    def get(self, key: str) -> bytes:
        """Object ``key``'s bytes."""
        return bytes(self.server.client().get_object(Bucket=self.bucket, Key=key)["Body"].read())

    def put(self, key: str, data: bytes) -> None:
        """Stores ``data`` as object ``key``."""
        self.server.client().put_object(Bucket=self.bucket, Key=key, Body=data)

    def delete(self, key: str) -> None:
        """Removes object ``key``."""
        self.server.client().delete_object(Bucket=self.bucket, Key=key)


def _start(kind: str, root: Path) -> Store | str:
    """Starts a server of ``kind`` with an empty bucket, or says why it could not."""
    try:
        if kind == "seaweedfs":
            import server_seaweedfs

            return Store(kind, server_seaweedfs.start(root))
        import server_s3

        return Store(kind, server_s3.start(root))
    except Exception as e:
        return f"{kind} did not start: {type(e).__name__}: {e}"


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Store | str]]:
    """Both servers (started together), each a :class:`Store` or why it did not start."""
    empty = tmp_path_factory.mktemp("empty_bucket")
    with ThreadPoolExecutor(max_workers=len(SERVER_KINDS)) as pool:
        started = dict(zip(SERVER_KINDS, pool.map(lambda k: _start(k, empty), SERVER_KINDS), strict=True))
    try:
        yield started
    finally:
        for store in started.values():
            if isinstance(store, Store):
                store.server.close()


def _store(servers: dict[str, Store | str], kind: str) -> Store:
    """The running server of ``kind``; FAILS the calling test if it did not start."""
    store = servers[kind]
    if isinstance(store, str):
        pytest.fail(store, pytrace=False)
    return store


def _use(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """Sets the server's client variables in this process (for the Python API)."""
    for key in [k for k in os.environ if k.startswith(("AWS_", "S3_"))]:
        monkeypatch.delenv(key)
    for key, value in store.server.env().items():
        monkeypatch.setenv(key, value)


# ----------------------------------------------------------------------------- ROOT

#: C++ the ROOT worker declares: locators and descriptors through ROOT 6.40's serializer,
#: rendered as JSON.
ROOT_CODE = r"""
#include <ROOT/RNTupleDescriptor.hxx>
#include <ROOT/RNTupleReader.hxx>
#include <ROOT/RNTupleSerialize.hxx>
#include <ROOT/RNTupleTypes.hxx>
#include <ROOT/RNTupleZip.hxx>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace object_layout_test {

using ROOT::RNTupleLocator;
using ROOT::Internal::RNTupleSerializer;

std::string Hex(const unsigned char *b, std::size_t n) {
   std::string out;
   char h[3];
   for (std::size_t i = 0; i < n; ++i) { std::snprintf(h, 3, "%02x", b[i]); out += h; }
   return out;
}

std::string Quote(const std::string &s) {
   std::string out = "\"";
   for (char c : s) {
      if (c == '"' || c == '\\') { out += '\\'; out += c; }
      else if (c == '\n') out += "\\n";
      else if (static_cast<unsigned char>(c) < 0x20) out += ' ';
      else out += c;
   }
   return out + "\"";
}

// ROOT's bytes of a locator: type 0 (file: standard or large) or 2 (kTypeDAOS, an
// object), as hex; "ERROR ..." if ROOT refuses it.
std::string SerializeLocator(int type, std::uint64_t nbytes, std::uint64_t position, int reserved) {
   try {
      RNTupleLocator loc;
      loc.SetNBytesOnStorage(nbytes);
      if (type == 2) {
         loc.SetType(RNTupleLocator::kTypeDAOS);
         loc.SetPosition(ROOT::RNTupleLocatorObject64{position});
      } else {
         loc.SetPosition(std::uint64_t(position));
      }
      if (reserved) loc.SetReserved(reserved);
      unsigned char buf[64];
      auto n = RNTupleSerializer::SerializeLocator(loc, buf).Unwrap();
      return Hex(buf, n);
   } catch (const std::exception &e) {
      return std::string("ERROR ") + e.what();
   }
}

std::string LocatorJson(const RNTupleLocator &loc) {
   std::uint64_t position = 0;
   if (loc.GetType() == RNTupleLocator::kTypeFile)
      position = loc.GetPosition<std::uint64_t>();
   else if (loc.GetType() == RNTupleLocator::kTypeDAOS)
      position = loc.GetPosition<ROOT::RNTupleLocatorObject64>().GetLocation();
   std::ostringstream o;
   o << "{\"type\":" << int(loc.GetType()) << ",\"nbytes\":" << loc.GetNBytesOnStorage()
     << ",\"position\":" << position << ",\"reserved\":" << int(loc.GetReserved()) << "}";
   return o.str();
}

// What ROOT reads from a locator's bytes (hex).
std::string DeserializeLocator(const std::string &hex) {
   try {
      std::vector<unsigned char> b(hex.size() / 2);
      for (std::size_t i = 0; i < b.size(); ++i) b[i] = std::stoi(hex.substr(2 * i, 2), nullptr, 16);
      RNTupleLocator loc;
      auto res = RNTupleSerializer::DeserializeLocator(b.data(), b.size(), loc);
      if (!res) return "{\"error\":" + Quote(res.GetError()->GetReport()) + "}";
      auto used = res.Unwrap();
      return "{\"used\":" + std::to_string(used) + "," + LocatorJson(loc).substr(1);
   } catch (const std::exception &e) {
      return "{\"error\":" + Quote(e.what()) + "}";
   }
}

std::string DescriptorJson(const ROOT::RNTupleDescriptor &d) {
   std::ostringstream o;
   o << "{\"name\":" << Quote(d.GetName()) << ",\"entries\":" << d.GetNEntries() << ",\"fields\":[";
   std::vector<ROOT::DescriptorId_t> todo{d.GetFieldZeroId()};
   std::vector<ROOT::DescriptorId_t> order;
   while (!todo.empty()) {
      auto id = todo.back();
      todo.pop_back();
      order.push_back(id);
      const auto &links = d.GetFieldDescriptor(id).GetLinkIds();
      for (auto it = links.rbegin(); it != links.rend(); ++it) todo.push_back(*it);
   }
   bool first = true;
   for (auto id : order) {
      if (id == d.GetFieldZeroId()) continue;
      const auto &f = d.GetFieldDescriptor(id);
      o << (first ? "" : ",") << "{\"name\":" << Quote(d.GetQualifiedFieldName(id))
        << ",\"type\":" << Quote(f.GetTypeName()) << ",\"structure\":" << int(f.GetStructure())
        << ",\"repetitions\":" << f.GetNRepetitions()
        << ",\"version\":" << f.GetTypeVersion() << "}";
      first = false;
   }
   o << "],\"columns\":[";
   first = true;
   for (const auto &c : d.GetColumnIterable()) {
      o << (first ? "" : ",") << "{\"logical\":" << c.GetLogicalId() << ",\"physical\":" << c.GetPhysicalId()
        << ",\"field\":" << Quote(d.GetQualifiedFieldName(c.GetFieldId())) << ",\"index\":" << c.GetIndex()
        << ",\"representation\":" << c.GetRepresentationIndex() << ",\"type\":" << int(c.GetType())
        << ",\"bits\":" << c.GetBitsOnStorage() << "}";
      first = false;
   }
   o << "],\"cluster_groups\":[";
   first = true;
   for (const auto &g : d.GetClusterGroupIterable()) {
      o << (first ? "" : ",") << "{\"min_entry\":" << g.GetMinEntry()
        << ",\"entry_span\":" << g.GetEntrySpan() << ",\"clusters\":" << g.GetNClusters()
        << ",\"page_list_length\":" << g.GetPageListLength()
        << ",\"page_list\":" << LocatorJson(g.GetPageListLocator()) << "}";
      first = false;
   }
   o << "],\"clusters\":[";
   first = true;
   for (const auto &cl : d.GetClusterIterable()) {
      o << (first ? "" : ",") << "{\"first_entry\":" << cl.GetFirstEntryIndex()
        << ",\"entries\":" << cl.GetNEntries() << ",\"columns\":[";
      first = false;
      bool firstColumn = true;
      for (const auto &r : cl.GetColumnRangeIterable()) {
         auto compression = r.GetCompressionSettings();
         o << (firstColumn ? "" : ",") << "{\"physical\":" << r.GetPhysicalColumnId()
           << ",\"first_element\":" << r.GetFirstElementIndex() << ",\"elements\":" << r.GetNElements()
           << ",\"suppressed\":" << (r.IsSuppressed() ? "true" : "false")
           << ",\"compression\":" << (compression ? std::to_string(*compression) : std::string("null"))
           << ",\"pages\":[";
         firstColumn = false;
         bool firstPage = true;
         if (!r.IsSuppressed()) {
            for (const auto &p : cl.GetPageRange(r.GetPhysicalColumnId()).GetPageInfos()) {
               o << (firstPage ? "" : ",") << "{\"elements\":" << p.GetNElements()
                 << ",\"checksum\":" << (p.HasChecksum() ? "true" : "false")
                 << ",\"locator\":" << LocatorJson(p.GetLocator()) << "}";
               firstPage = false;
            }
         }
         o << "]}";
      }
      o << "]}";
   }
   o << "]}";
   return o.str();
}

// ROOT's descriptor of RNTuple `name` in the ROOT file at `path`.
std::string FileDescriptor(const std::string &path, const std::string &name) {
   try {
      auto reader = ROOT::RNTupleReader::Open(name, path);
      return DescriptorJson(reader->GetDescriptor());
   } catch (const std::exception &e) {
      return "{\"error\":" + Quote(e.what()) + "}";
   }
}

std::vector<unsigned char> ReadAll(const std::string &path) {
   std::ifstream in(path, std::ios::binary);
   if (!in) throw std::runtime_error("cannot open " + path);
   return std::vector<unsigned char>(std::istreambuf_iterator<char>(in), {});
}

// The envelope stored as object `id` of the dataset at `base` (DIR/PREFIX: object n is
// the file DIR/PREFIX.d/n.obj): `nbytes` as stored, `length` uncompressed.
std::vector<unsigned char>
Envelope(const std::string &base, std::uint64_t id, std::uint64_t nbytes, std::uint64_t length) {
   auto path = base + ".d/" + std::to_string(id) + ".obj";
   auto raw = ReadAll(path);
   if (raw.size() != nbytes)
      throw std::runtime_error(path + " holds " + std::to_string(raw.size()) + " bytes, its link says " +
                               std::to_string(nbytes));
   if (nbytes == length) return raw;
   std::vector<unsigned char> out(length);
   ROOT::Internal::RNTupleDecompressor::Unzip(raw.data(), nbytes, length, out.data());
   return out;
}

// ROOT's descriptor of the dataset at `base` from its objects: header and footer (as the
// anchor links them), then every page list (as the footer links them), through
// RNTupleSerializer into an RNTupleDescriptorBuilder, as ROOT's page sources do.
std::string ObjectsDescriptor(const std::string &base, std::uint16_t epoch, std::uint16_t major,
                              std::uint16_t minor, std::uint16_t patch, std::uint64_t headerId,
                              std::uint64_t nbytesHeader, std::uint64_t lenHeader, std::uint64_t footerId,
                              std::uint64_t nbytesFooter, std::uint64_t lenFooter) {
   try {
      ROOT::Internal::RNTupleDescriptorBuilder builder;
      builder.SetVersion(epoch, major, minor, patch);
      auto header = Envelope(base, headerId, nbytesHeader, lenHeader);
      RNTupleSerializer::DeserializeHeader(header.data(), header.size(), builder).ThrowOnError();
      auto footer = Envelope(base, footerId, nbytesFooter, lenFooter);
      RNTupleSerializer::DeserializeFooter(footer.data(), footer.size(), builder).ThrowOnError();
      auto desc = builder.MoveDescriptor();
      std::vector<std::tuple<ROOT::DescriptorId_t, RNTupleLocator, std::uint64_t>> groups;
      for (const auto &g : desc.GetClusterGroupIterable())
         groups.emplace_back(g.GetId(), g.GetPageListLocator(), g.GetPageListLength());
      for (const auto &[id, loc, length] : groups) {
         if (loc.GetType() != RNTupleLocator::kTypeDAOS)
            throw std::runtime_error("the page list of cluster group " + std::to_string(id) +
                                     " has locator type " + std::to_string(int(loc.GetType())));
         auto object = loc.GetPosition<ROOT::RNTupleLocatorObject64>().GetLocation();
         auto list = Envelope(base, object, loc.GetNBytesOnStorage(), length);
         RNTupleSerializer::DeserializePageList(list.data(), list.size(), id, desc,
                                                RNTupleSerializer::EDescriptorDeserializeMode::kForReading)
            .ThrowOnError();
      }
      return DescriptorJson(desc);
   } catch (const std::exception &e) {
      return "{\"error\":" + Quote(e.what()) + "}";
   }
}

} // namespace object_layout_test
"""


def _root_worker() -> int:
    """The ROOT worker: a JSON list of requests on standard input, a JSON list of answers
    on standard output (after a ``RESULTS`` line: ROOT prints to it too)."""
    requests = json.load(sys.stdin)
    import ROOT

    ROOT.gInterpreter.Declare(ROOT_CODE)
    ns = ROOT.object_layout_test
    answers: list[Any] = []
    for r in requests:
        op = r["op"]
        if op == "serialize":
            answers.append(str(ns.SerializeLocator(*r["args"])))
        elif op == "deserialize":
            answers.append(json.loads(str(ns.DeserializeLocator(r["hex"]))))
        elif op == "file_descriptor":
            answers.append(json.loads(str(ns.FileDescriptor(r["path"], r["name"]))))
        elif op == "objects_descriptor":
            a = r["anchor"]
            answers.append(
                json.loads(
                    str(
                        ns.ObjectsDescriptor(
                            r["base"],
                            a["formatVersionEpoch"],
                            a["formatVersionMajor"],
                            a["formatVersionMinor"],
                            a["formatVersionPatch"],
                            a["headerObjId"],
                            a["nBytesHeader"],
                            a["lenHeader"],
                            a["footerObjId"],
                            a["nBytesFooter"],
                            a["lenFooter"],
                        )
                    )
                )
            )
        elif op == "dump":
            try:
                answers.append({"entries": json.loads(rootdump.dump_text(r["path"], r["name"]))})
            except Exception as e:
                answers.append({"error": " ".join(str(e).split())[:500]})
        elif op == "attributes":
            try:
                answers.append({"entries": rootdump.dump_attributes(r["path"], r["name"])})
            except Exception as e:
                answers.append({"error": " ".join(str(e).split())[:500]})
        else:
            answers.append({"error": f"unknown request {op!r}"})
    sys.stdout.flush()
    print("RESULTS", flush=True)
    print(json.dumps(answers), flush=True)
    return 0


def _root(requests: list[dict[str, Any]], timeout: float = 300) -> list[Any]:
    """ROOT 6.40's answers to ``requests`` (see :func:`_root_worker`), from one worker
    process; FAILS the calling test if the worker dies."""
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--root-worker"],
        input=json.dumps(requests),
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )
    lines = proc.stdout.splitlines()
    if proc.returncode != 0 or "RESULTS" not in lines:
        err = [ln for ln in proc.stderr.splitlines() if ln.strip() and "alpha stage" not in ln]
        pytest.fail(
            f"the ROOT worker failed (exit {proc.returncode}): {' | '.join(err[-15:])[:3000]}", pytrace=False
        )
    answers: list[Any] = json.loads(lines[lines.index("RESULTS") + 1])
    return answers


# ----------------------------------------------------------------------------- locators


@dataclass(frozen=True)
class LocatorCase:
    """A locator: ``kind`` (``file``/``object``), size, position (file offset or object
    location) and reserved bit."""

    kind: str
    size: int
    position: int
    reserved: int = 0

    @property
    def id(self) -> str:
        """The test id."""
        return f"{self.kind}-size{self.size}-at{self.position}-reserved{self.reserved}"

    @property
    def root_type(self) -> int:
        """ROOT's in-memory locator type (kTypeFile 0, kTypeDAOS 2)."""
        return 2 if self.kind == "object" else 0

    @property
    def expected_len(self) -> int:
        """The serialized size: 12 (standard), 16 (object, 32-bit size) or 20 bytes."""
        if self.kind == "file":
            return 12 if self.size < 2**31 and not self.reserved else 20
        return 16 if self.size < 2**32 else 20


#: Every size class ROOT 6.40 can express: standard file locators, large ones (reserved 0
#: and 1: ROOT keeps one reserved bit), object locators with 32- and 64-bit sizes.
LOCATOR_CASES = [
    *(LocatorCase("file", size, pos) for size in (0, 1, 2**31 - 1) for pos in (0, 7, 2**40)),
    *(LocatorCase("file", size, 7, reserved) for size in (2**31, 5 << 30, 2**40) for reserved in (0, 1)),
    *(
        LocatorCase("object", size, location, reserved)
        for size in (0, 100, 2**32 - 1, 2**32, 8 << 30)
        for location in (0, 7, 2**40)
        for reserved in (0, 1)
    ),
]
#: A standard-size file locator with the reserved bit set, and reserved values ROOT's
#: one-bit field cannot hold (see :func:`test_reserved_values_root_cannot_hold`).
SMALL_RESERVED = LocatorCase("file", 100, 7, 1)
WIDE_RESERVED = [LocatorCase("file", 5 << 30, 7, 7), LocatorCase("object", 100, 7, 7)]
#: An unknown locator type (0x05, 12 bytes): ROOT reads it as kTypeUnknown.
UNKNOWN_LOCATOR = ("unknown05", 12, 0)


def _our_locators(groups: list[tuple[str, int, int, int]]) -> list[str]:
    """Our serialized locators (hex), one per ``(kind, size, position, reserved)``, from
    one run of ``locator_bytes``."""
    from conftest import rust_tool

    tool = rust_tool("locator_bytes", "RNTUPLE_LOCATOR_BYTES")
    args = [str(x) for group in groups for x in group]
    proc = subprocess.run([str(tool), *args], capture_output=True, text=True, check=False, timeout=60)
    assert proc.returncode == 0, f"locator_bytes failed: {proc.stderr}"
    lines = proc.stdout.split()
    assert len(lines) == len(groups), proc.stdout
    return lines


@dataclass
class LocatorOracle:
    """Our bytes and ROOT's for every locator case, and ROOT's reading of ours."""

    ours: dict[str, str] = field(default_factory=dict)  #: case id -> our hex
    roots: dict[str, str] = field(default_factory=dict)  #: case id -> ROOT's hex (or ERROR ...)
    read: dict[str, dict[str, Any]] = field(default_factory=dict)  #: case id -> ROOT's reading of ours


@pytest.fixture(scope="module")
def locators() -> LocatorOracle:
    """Every locator case serialized by us and by ROOT, and ours read by ROOT (one
    ``locator_bytes`` run, one ROOT worker)."""
    cases = [*LOCATOR_CASES, SMALL_RESERVED, *WIDE_RESERVED]
    ours = _our_locators([(c.kind, c.size, c.position, c.reserved) for c in cases] + [(*UNKNOWN_LOCATOR, 0)])
    requests: list[dict[str, Any]] = [
        {"op": "serialize", "args": [c.root_type, c.size, c.position, c.reserved]} for c in cases
    ]
    requests += [{"op": "deserialize", "hex": h} for h in ours]
    answers = _root(requests)
    oracle = LocatorOracle()
    for i, c in enumerate(cases):
        oracle.ours[c.id] = ours[i]
        oracle.roots[c.id] = answers[i]
        oracle.read[c.id] = answers[len(cases) + i]
    oracle.ours["unknown"] = ours[-1]
    oracle.read["unknown"] = answers[-1]
    return oracle


@pytest.mark.parametrize("case", LOCATOR_CASES, ids=lambda c: c.id)
def test_locator_bytes_equal_roots(case: LocatorCase, locators: LocatorOracle) -> None:
    """Our serialized locator is ROOT 6.40's ``SerializeLocator`` byte for byte, and ROOT's
    ``DeserializeLocator`` reads it back to the same type, size, position and reserved bit."""
    ours, roots = locators.ours[case.id], locators.roots[case.id]
    assert not roots.startswith("ERROR"), f"ROOT refused {case}: {roots}"
    assert ours == roots, f"{case}: ours {ours}, ROOT's {roots}"
    assert len(ours) == 2 * case.expected_len
    assert locators.read[case.id] == {
        "used": case.expected_len,
        "type": case.root_type,
        "nbytes": case.size,
        "position": case.position,
        "reserved": case.reserved,
    }


def test_large_file_locator_reads_as_5_gib(locators: LocatorOracle) -> None:
    """ROOT reads our 20-byte large file locator of 5 GiB (the form ROOT could not read
    before the head was negated) as a file locator of 5 GiB at its offset."""
    case = LocatorCase("file", 5 << 30, 7)
    assert locators.ours[case.id] == "ecfffffe" + "0000004001000000" + "0700000000000000"
    assert locators.read[case.id]["nbytes"] == 5 << 30
    assert locators.read[case.id]["type"] == 0


def test_reserved_bit_on_a_standard_size_file_locator(locators: LocatorOracle) -> None:
    """ROOT 6.40 drops the reserved bit of a file locator that fits the standard form (it
    writes 12 bytes), where we keep it in a large locator (20 bytes), which ROOT reads
    back as a file locator with the bit set: nothing is lost either way round."""
    c = SMALL_RESERVED
    assert locators.roots[c.id] == "64000000" + "0700000000000000", "ROOT wrote the reserved bit"
    assert locators.ours[c.id] == "ecfffefe" + "6400000000000000" + "0700000000000000"
    assert locators.read[c.id] == {"used": 20, "type": 0, "nbytes": 100, "position": 7, "reserved": 1}


@pytest.mark.parametrize("case", WIDE_RESERVED, ids=lambda c: c.id)
def test_reserved_values_root_cannot_hold(case: LocatorCase, locators: LocatorOracle) -> None:
    """ROOT 6.40 keeps one reserved bit: ``SetReserved(7)`` throws, and a locator whose
    reserved byte is 7 (which we write as given, in the byte ROOT's negated head keeps
    for it) is refused by ``DeserializeLocator`` with the same overflow."""
    assert locators.roots[case.id].startswith("ERROR Overflow of the locator reserved field")
    head = int.from_bytes(bytes.fromhex(locators.ours[case.id][:8]), "little", signed=True)
    assert (-head >> 16) & 0xFF == 7
    assert "Overflow of the locator reserved field" in locators.read[case.id].get("error", "")


def test_unknown_locator_type_reads_as_unknown(locators: LocatorOracle) -> None:
    """A locator of a type neither side knows (0x05, 12 bytes) reads in ROOT as
    ``kTypeUnknown`` over its stated size."""
    assert locators.ours["unknown"] == "f4fffffa" + "00" * 8
    assert locators.read["unknown"]["type"] == 0x81
    assert locators.read["unknown"]["used"] == 12


# ----------------------------------------------------------------------------- anchors


def _canonical(anchor: dict[str, Any]) -> str:
    """The form ROOT hashes: every member but ``checksum``, keys sorted, no whitespace."""
    members = {k: v for k, v in anchor.items() if k != "checksum"}
    return json.dumps(members, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _xxh3(text: str) -> int:
    """XXH3-64 (seed 0) of ``text``'s UTF-8 bytes."""
    import xxhash

    return int(xxhash.xxh3_64_intdigest(text.encode()))


def _check_anchor_bytes(data: bytes, where: str) -> dict[str, Any]:
    """Checks an anchor object as ROOT's ``RNTupleAnchorS3`` stores it and returns it."""
    text = data.decode()
    anchor = json.loads(text)
    assert text == json.dumps(anchor, sort_keys=True, indent=2), f"{where}: not sorted, 2-space indented JSON"
    assert not text.endswith("\n"), f"{where}: a trailing newline"
    assert anchor["anchorVersion"] == 0
    assert anchor["urlTemplate"] == "${baseurl}/${objid}"
    assert anchor["cloneTemplate"] == "${baseurl}/_clone/${name}"
    # The header is the first object a write stores, the footer its last (ids start at 0
    # in an empty prefix, after the highest one there otherwise).
    assert anchor["headerObjId"] < anchor["footerObjId"], f"{where}: header and footer ids"
    assert anchor["headerOffset"] == 0 and anchor["footerOffset"] == 0
    assert anchor["checksum"] == _xxh3(_canonical(anchor)), f"{where}: checksum"
    return anchor


def test_anchor_reference_vector(tmp_path: Path) -> None:
    """ROOT's test vector hashes to 11945761863780303168, and our reader accepts that
    anchor (it goes on to the header object, which is missing) but refuses it with any
    other checksum."""
    anchor: dict[str, Any] = {
        "anchorVersion": 0,
        "formatVersionEpoch": 1,
        "formatVersionMajor": 0,
        "formatVersionMinor": 2,
        "formatVersionPatch": 0,
        "urlTemplate": "${baseurl}/${objid}",
        "cloneTemplate": "${baseurl}/_clone/${name}",
        "headerObjId": 0,
        "headerOffset": 0,
        "nBytesHeader": 1234,
        "lenHeader": 5678,
        "footerObjId": 9,
        "footerOffset": 0,
        "nBytesFooter": 321,
        "lenFooter": 654,
    }
    checksum = _xxh3(_canonical(anchor))
    assert checksum == REFERENCE_CHECKSUM
    for value, accepted in ((checksum, True), (checksum + 1, False)):
        (tmp_path / "vector.obj").write_text(
            json.dumps({**anchor, "checksum": value}, sort_keys=True, indent=2)
        )
        proc = run_cli(["info", f"ntpl+file://{tmp_path}/vector"], clean_env())
        assert proc.returncode == 1, printed(proc)
        said = printed(proc).lower()
        if accepted:
            assert "checksum" not in said and "vector.d/0.obj" in said, said
        else:
            assert "checksum" in said, said


# ----------------------------------------------------------------------------- envelopes


@pytest.fixture(scope="module")
def object_copies(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """:data:`DESCRIPTOR_CASES` copied into ``ntpl+file://DIR/<case>`` (returns DIR), each
    replacing (``--force``) a dataset of another case there before: the header is then
    not object 0, and ROOT finds every object by the ids the anchor and locators give."""
    conformance = conformance_data.require()
    out = tmp_path_factory.mktemp("object_copies")

    def copy(case: str) -> str | None:
        url = f"ntpl+file://{out}/{case}"
        first = run_cli(["copy", str(conformance / "write" / "types.string.root"), url], clean_env())
        if first.returncode != 0:
            return f"{case}: {printed(first)}"
        proc = run_cli(["copy", "--force", str(conformance / "write" / f"{case}.root"), url], clean_env())
        return None if proc.returncode == 0 else f"{case}: {printed(proc)}"

    with ThreadPoolExecutor(max_workers=4) as pool:
        problems = [p for p in pool.map(copy, DESCRIPTOR_CASES) if p]
    assert not problems, problems
    return out


@pytest.fixture(scope="module")
def descriptors(object_copies: Path) -> dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]:
    """Per case: our anchor, ROOT's descriptor of the original file, and ROOT's
    descriptor deserialized from our objects (one ROOT worker)."""
    requests: list[dict[str, Any]] = []
    anchors = {}
    for case in DESCRIPTOR_CASES:
        anchors[case] = json.loads((object_copies / f"{case}.obj").read_text())
        requests.append(
            {"op": "file_descriptor", "path": str(conformance_data.write_file(case)), "name": "ntpl"}
        )
        requests.append(
            {"op": "objects_descriptor", "base": str(object_copies / case), "anchor": anchors[case]}
        )
    answers = _root(requests)
    return {
        case: (anchors[case], answers[2 * i], answers[2 * i + 1]) for i, case in enumerate(DESCRIPTOR_CASES)
    }


def _schema(d: dict[str, Any]) -> dict[str, Any]:
    """A descriptor's fields and columns."""
    return {"name": d["name"], "entries": d["entries"], "fields": d["fields"], "columns": d["columns"]}


def _clusters(d: dict[str, Any]) -> list[dict[str, Any]]:
    """A descriptor's clusters by first entry, columns by id, pages without locators."""
    out = []
    for c in sorted(d["clusters"], key=lambda c: c["first_entry"]):
        columns = []
        for r in sorted(c["columns"], key=lambda r: r["physical"]):
            pages = [
                {"elements": p["elements"], "checksum": p["checksum"], "nbytes": p["locator"]["nbytes"]}
                for p in r["pages"]
            ]
            columns.append({**{k: v for k, v in r.items() if k != "pages"}, "pages": pages})
        out.append({"first_entry": c["first_entry"], "entries": c["entries"], "columns": columns})
    return out


@pytest.mark.parametrize("case", DESCRIPTOR_CASES)
def test_root_deserializes_our_envelopes(
    case: str,
    object_copies: Path,
    descriptors: dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]],
) -> None:
    """ROOT 6.40's ``DeserializeHeader``/``DeserializeFooter``/``DeserializePageList`` read our
    header, footer and page-list objects to the original file's descriptor: fields,
    columns, entries, clusters, every page's element count, checksum flag and size; every
    page and page list behind an object locator (0x02) whose object holds exactly its
    bytes (a page: its size plus the 8-byte checksum); objects numbered from the
    header's id (not 0: the dataset replaced one there before, whose objects took the
    ids before it and are gone) to the footer's, each one used."""
    anchor, original, ours = descriptors[case]
    assert "error" not in original, original
    assert "error" not in ours, f"ROOT could not read our objects: {ours['error']}"
    assert _schema(ours) == _schema(original)
    assert _clusters(ours) == _clusters(original)
    objects = object_copies / f"{case}.d"
    used = {anchor["headerObjId"], anchor["footerObjId"]}
    offsets_to_objects: dict[int, int] = {}
    for cluster, original_cluster in zip(
        sorted(ours["clusters"], key=lambda c: c["first_entry"]),
        sorted(original["clusters"], key=lambda c: c["first_entry"]),
        strict=True,
    ):
        ranges = {r["physical"]: r for r in original_cluster["columns"]}
        for r in cluster["columns"]:
            for page, original_page in zip(r["pages"], ranges[r["physical"]]["pages"], strict=True):
                loc = page["locator"]
                assert loc["type"] == 2 and loc["reserved"] == 0, loc
                size = (objects / f"{loc['position']}.obj").stat().st_size
                assert size == loc["nbytes"] + (8 if page["checksum"] else 0), (loc, size)
                # Pages the original stores once (same-page merging) are one object.
                offset = original_page["locator"]["position"]
                assert offsets_to_objects.setdefault(offset, loc["position"]) == loc["position"]
                used.add(loc["position"])
    entries = 0
    for group in sorted(ours["cluster_groups"], key=lambda g: g["min_entry"]):
        loc = group["page_list"]
        assert loc["type"] == 2 and loc["reserved"] == 0, loc
        assert (objects / f"{loc['position']}.obj").stat().st_size == loc["nbytes"]
        assert group["min_entry"] == entries
        entries += group["entry_span"]
        used.add(loc["position"])
    assert entries == original["entries"]
    stored = {int(p.stem) for p in objects.glob("*.obj")}
    assert anchor["headerObjId"] > 0, anchor
    assert stored == used == set(range(anchor["headerObjId"], anchor["footerObjId"] + 1))
    _check_anchor_bytes((object_copies / f"{case}.obj").read_bytes(), f"{case}.obj")


# ----------------------------------------------------------------------------- conformance


@dataclass
class RoundTrip:
    """The round trips through one server."""

    problem: str | None = None  #: why nothing could be checked
    results: dict[str, tuple[str, str]] = field(default_factory=dict)  #: case -> (status, detail)
    copies: dict[str, Path] = field(default_factory=dict)  #: case -> the copy back
    up: dict[str, subprocess.CompletedProcess[str]] = field(default_factory=dict)  #: case -> the copy up
    attributes: dict[str, Any] = field(default_factory=dict)  #: ROOT's readings of the attributes case
    root_credentials: dict[str, str] = field(default_factory=dict)  #: case -> problem ("" if none)
    root_credential_copies: dict[str, Path] = field(default_factory=dict)  #: case -> that copy back


#: Cases copied once more with ROOT's credential variables only.
ROOT_CREDENTIAL_CASES = ["types.vector.nested", "structure.clusters"]


def _roundtrip_one(
    store: Store, conformance: Path, outdir: Path, case: str, env: dict[str, str], tag: str
) -> tuple[subprocess.CompletedProcess[str], str | None]:
    """Copies ``case`` up to ``store`` and back into ``outdir``; the copy up and what went
    wrong (``None``)."""
    url = store.url(f"{tag}/{case}")
    up = run_cli(["copy", str(conformance / "write" / f"{case}.root"), url], env)
    if up.returncode != 0:
        return up, f"COPY UP exit {up.returncode}: {printed(up)}"
    out = outdir / f"{case}.root"
    down = run_cli(["copy", url, str(out)], env)
    if down.returncode != 0 or not out.is_file():
        return up, f"COPY DOWN exit {down.returncode}: {printed(down)}"
    return up, None


@pytest.fixture(scope="module")
def roundtrips(
    servers: dict[str, Store | str], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, RoundTrip]:
    """Every case copied up to each server and back (both servers at once, four copies
    at a time), ROOT's reading of every copy checked against its reference."""
    conformance = conformance_data.require()
    rntuple_command()
    trips = {kind: RoundTrip() for kind in SERVER_KINDS}
    jobs = []
    for kind in SERVER_KINDS:
        store = servers[kind]
        if isinstance(store, str):
            trips[kind].problem = store
            continue
        out = tmp_path_factory.mktemp(f"roundtrip_{kind}")
        creds = tmp_path_factory.mktemp(f"roundtrip_{kind}_root_credentials")
        jobs += [
            (store, out, case, store.env(), "conformance") for case in [*ROUNDTRIP_CASES, ATTRIBUTES_CASE]
        ]
        jobs += [(store, creds, case, store.root_env(), "root-credentials") for case in ROOT_CREDENTIAL_CASES]

    def run(
        job: tuple[Store, Path, str, dict[str, str], str],
    ) -> tuple[subprocess.CompletedProcess[str], str | None]:
        store, out, case, env, tag = job
        return _roundtrip_one(store, conformance, out, case, env, tag)

    with ThreadPoolExecutor(max_workers=4) as pool:
        outcomes = list(pool.map(run, jobs))
    for (store, out, case, _env, tag), (up, problem) in zip(jobs, outcomes, strict=True):
        trip = trips[store.kind]
        if tag == "root-credentials":
            trip.root_credentials[case] = problem or ""
            trip.root_credential_copies[case] = out / f"{case}.root"
            continue
        trip.up[case] = up
        if problem:
            trip.results[case] = ("COPY", problem)
        else:
            trip.copies[case] = out / f"{case}.root"

    def check(kind: str) -> None:
        trip = trips[kind]
        if trip.problem:
            return
        copied = {c: p for c, p in trip.copies.items() if c != ATTRIBUTES_CASE}
        trip.results.update(rootdump.run_tasks(rootdump.conformance_tasks(conformance, copied)))

    with ThreadPoolExecutor(max_workers=len(SERVER_KINDS)) as pool:
        list(pool.map(check, SERVER_KINDS))
    # The attributes case: ROOT's reading of the main RNTuple, and of the attribute set.
    requests: list[dict[str, Any]] = []
    original = str(conformance_data.write_file(ATTRIBUTES_CASE))
    requests.append({"op": "dump", "path": original, "name": "ntpl"})
    for kind in SERVER_KINDS:
        copy = trips[kind].copies.get(ATTRIBUTES_CASE)
        if copy is not None:
            requests.append({"op": "dump", "path": str(copy), "name": "ntpl", "kind": kind})
            requests.append({"op": "attributes", "path": str(copy), "name": "ntpl", "kind": kind})
    answers = _root(requests)
    for request, answer in zip(requests[1:], answers[1:], strict=True):
        trips[request["kind"]].attributes[request["op"]] = answer
        trips[request["kind"]].attributes["original"] = answers[0]
    return trips


def _trip(roundtrips: dict[str, RoundTrip], kind: str) -> RoundTrip:
    """The round trips through ``kind``; FAILS the calling test if there are none."""
    trip = roundtrips[kind]
    if trip.problem:
        pytest.fail(trip.problem, pytrace=False)
    return trip


@pytest.mark.parametrize("case", ROUNDTRIP_CASES)
@pytest.mark.parametrize("kind", SERVER_KINDS)
def test_conformance_roundtrip(kind: str, case: str, roundtrips: dict[str, RoundTrip]) -> None:
    """ROOT 6.40 reads ``write/<case>.root`` copied to ``ntpl+s3+http://...`` and back to
    exactly ``read/<case>.json``."""
    status, detail = _trip(roundtrips, kind).results[case]
    if status != "OK":
        pytest.fail(f"{kind}, {case}: {status}: {detail}", pytrace=False)


@pytest.mark.parametrize("kind", SERVER_KINDS)
def test_attribute_set_is_left_out(kind: str, roundtrips: dict[str, RoundTrip]) -> None:
    """``structure.attributes`` through the S3 layout (which has no attribute sets yet):
    ROOT reads the main RNTuple's entries as in the original, and the copy has no
    attribute set (ROOT's ``OpenAttributeSet`` fails)."""
    trip = _trip(roundtrips, kind)
    if ATTRIBUTES_CASE not in trip.copies:
        pytest.fail(f"{kind}: {trip.results[ATTRIBUTES_CASE][1]}", pytrace=False)
    original, copy = trip.attributes["original"], trip.attributes["dump"]
    assert "error" not in original and "error" not in copy, (original, copy)
    assert copy["entries"] == original["entries"]
    assert len(copy["entries"]) == 3
    assert "error" in trip.attributes["attributes"], "ROOT found an attribute set in the copy"


@pytest.mark.parametrize("kind", SERVER_KINDS)
def test_attribute_set_left_out_is_reported(kind: str, roundtrips: dict[str, RoundTrip]) -> None:
    """Copying ``structure.attributes`` into the S3 layout says that the attribute set
    ``Attributes`` is left out, as ``rntuple merge`` does ("attribute set "Attributes" is
    not merged"): a copy otherwise carries attribute sets."""
    trip = _trip(roundtrips, kind)
    up = trip.up[ATTRIBUTES_CASE]
    assert up.returncode == 0, printed(up)
    assert 'attribute set "Attributes"' in up.stderr, f"the copy did not say so: {printed(up)}"


@pytest.mark.parametrize("kind", SERVER_KINDS)
def test_feature_flag_copy_fails_and_stores_nothing(kind: str, servers: dict[str, Store | str]) -> None:
    """``structure.feature_flag`` (a feature this reader does not know): the copy fails
    naming it and leaves no anchor and no object."""
    store = _store(servers, kind)
    url = store.url(f"feature/{ERROR_CASE}")
    proc = run_cli(["copy", str(conformance_data.write_file(ERROR_CASE)), url], store.env())
    assert proc.returncode == 1, printed(proc)
    assert "feature" in proc.stderr and ERROR_CASE in proc.stderr, printed(proc)
    assert store.keys(f"feature/{ERROR_CASE}") == []


@pytest.mark.parametrize("kind", SERVER_KINDS)
def test_root_credential_variables(kind: str, roundtrips: dict[str, RoundTrip], tmp_path: Path) -> None:
    """With ROOT's ``S3_ACCESS_KEY``, ``S3_SECRET_KEY`` and ``S3_REGION`` only (no
    ``AWS_*``; SeaweedFS checks the signature), copies up and back work and hold what the
    copies made with ``AWS_*`` hold (which ROOT read to the references)."""
    trip = _trip(roundtrips, kind)
    for case in ROOT_CREDENTIAL_CASES:
        assert trip.root_credentials.get(case) == "", f"{case}: {trip.root_credentials.get(case)}"
        assert trip.results[case][0] == "OK", trip.results[case]
    for case in ROOT_CREDENTIAL_CASES:
        dumps = []
        for path in (trip.copies[case], trip.root_credential_copies[case]):
            proc = run_cli(["dump", "--json", str(path)], clean_env())
            assert proc.returncode == 0, printed(proc)
            dumps.append(json.loads(proc.stdout))
        assert dumps[0] == dumps[1], case


# ----------------------------------------------------------------------------- failures


@pytest.fixture(scope="module")
def big_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """2,000,000 entries of two incompressible 64-bit columns in 16 KiB pages: about
    2,000 page objects (32 MB), a copy of a few seconds."""
    import numpy as np

    import rntuple

    path = tmp_path_factory.mktemp("big") / "big.root"
    rng = np.random.default_rng(5)
    n = 2_000_000
    with rntuple.recreate(path, page_size="16 KiB", cluster_size="4 MiB", compression="none") as f:
        f["Events"] = {"a": rng.integers(0, 1 << 60, n), "b": rng.random(n)}
    return path


def test_killed_writer_leaves_no_anchor(servers: dict[str, Store | str], big_file: Path) -> None:
    """A copy to SeaweedFS killed (SIGKILL) once it has stored some objects leaves them
    without an anchor: the dataset does not open (the error says there is no anchor,
    and the command that removes them), and a second copy to the same prefix works (and
    verifies), its objects beside the leftovers, which it removes."""
    store = _store(servers, "seaweedfs")
    prefix = "killed/big"
    url = store.url(prefix)
    writer = subprocess.Popen(
        [str(rntuple_command()), "copy", str(big_file), url],
        env=store.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stored: list[str] = []
    try:
        deadline = time.monotonic() + COMMAND_TIMEOUT
        while writer.poll() is None and time.monotonic() < deadline:
            stored = store.keys(prefix + "/")
            if len(stored) >= 100:
                break
            time.sleep(0.02)
    finally:
        still_running = writer.poll() is None
        writer.send_signal(signal.SIGKILL)
        out, err = writer.communicate(timeout=30)
    assert still_running, (
        f"the copy ended before it could be killed ({len(stored)} objects seen): {out} {err}"
    )
    assert len(stored) >= 100
    assert prefix not in store.keys(prefix), "a killed writer left an anchor"
    proc = run_cli(["info", url], store.env())
    assert proc.returncode == 1, printed(proc)
    assert "no anchor" in proc.stderr, printed(proc)
    assert f"`rntuple verify --repair {url}` removes them" in proc.stderr, printed(proc)
    again = run_cli(["copy", str(big_file), url], store.env())
    assert again.returncode == 0, printed(again)
    verify = run_cli(["verify", url], store.env())
    assert verify.returncode == 0 and "2000000 entries" in verify.stdout, printed(verify)
    # The second copy took ids after the leftovers, and removed them once its anchor was
    # stored.
    anchor = json.loads(store.get(prefix))
    ids = {int(k.rsplit("/", 1)[1]) for k in store.keys(prefix + "/")}
    assert anchor["headerObjId"] > 0
    assert ids == set(range(anchor["headerObjId"], anchor["footerObjId"] + 1))


@pytest.mark.parametrize("kind", SERVER_KINDS)
def test_existing_dataset_needs_force(kind: str, servers: dict[str, Store | str]) -> None:
    """A copy onto an existing dataset is refused without ``--force`` (exit status 2, as
    for an existing output file) and the old dataset still reads; with ``--force`` the
    new one replaces it, none of the old objects stays, and its anchor (as the server
    holds it) has ROOT's form and checksum."""
    store = _store(servers, kind)
    env = store.env()
    url = store.url("existing/ds")
    old, new = conformance_data.write_file("types.vector.nested"), conformance_data.write_file("types.string")
    first = run_cli(["copy", str(old), url], env)
    assert first.returncode == 0, printed(first)
    old_objects = set(store.keys("existing/ds/"))
    refused = run_cli(["copy", str(new), url], env)
    assert refused.returncode == 2, printed(refused)
    assert "already exists" in refused.stderr and "--force" in refused.stderr, printed(refused)
    still = run_cli(["ls", url], env)
    assert still.returncode == 0 and "SplitIndex64" in still.stdout, printed(still)
    assert set(store.keys("existing/ds/")) == old_objects
    forced = run_cli(["copy", "--force", str(new), url], env)
    assert forced.returncode == 0, printed(forced)
    now = run_cli(["dump", "--json", url], env)
    want = run_cli(["dump", "--json", str(new)], env)
    assert now.returncode == 0 and json.loads(now.stdout) == json.loads(want.stdout), printed(now)
    # The new objects took the ids after the old ones', which are gone.
    anchor = _check_anchor_bytes(store.get("existing/ds"), f"{kind} existing/ds")
    assert anchor["headerObjId"] == len(old_objects)
    ids = {int(k.rsplit("/", 1)[1]) for k in store.keys("existing/ds/")}
    assert ids == set(range(anchor["headerObjId"], anchor["footerObjId"] + 1))


@pytest.mark.parametrize("kind", SERVER_KINDS)
def test_missing_or_corrupt_page_object(kind: str, servers: dict[str, Store | str]) -> None:
    """A page object whose bytes changed is a checksum error naming the object, and a
    missing one an error naming its key, in ``rntuple verify`` and ``rntuple dump``."""
    store = _store(servers, kind)
    env = store.env()
    prefix = "damaged/ds"
    url = store.url(prefix)
    proc = run_cli(["copy", str(conformance_data.write_file("types.vector.nested")), url], env)
    assert proc.returncode == 0, printed(proc)
    page = store.get(f"{prefix}/1")
    store.put(f"{prefix}/1", bytes([page[0] ^ 0xFF]) + page[1:])
    for command in (["verify", url], ["dump", "--json", url]):
        proc = run_cli(command, env)
        assert proc.returncode == 1, printed(proc)
        said = printed(proc)
        assert "checksum mismatch in page at object 1" in said, said
    store.delete(f"{prefix}/1")
    for command in (["verify", url], ["dump", "--json", url]):
        proc = run_cli(command, env)
        assert proc.returncode == 1, printed(proc)
        said = printed(proc)
        assert f"{prefix}/1" in said and "no such" in said, said


@pytest.mark.parametrize("kind", SERVER_KINDS)
def test_missing_bucket(kind: str, servers: dict[str, Store | str]) -> None:
    """A dataset in a bucket that does not exist: reading and writing fail, each saying
    the bucket does not exist (not that the dataset's anchor is missing)."""
    store = _store(servers, kind)
    env = store.env()
    url = store.url("ds", bucket="absent-bucket")
    write = run_cli(["copy", str(conformance_data.write_file("types.vector.nested")), url], env)
    assert write.returncode == 1, printed(write)
    assert "NoSuchBucket" in write.stderr, printed(write)
    read = run_cli(["info", url], env)
    assert read.returncode == 1, printed(read)
    assert "NoSuchBucket" in read.stderr or "bucket does not exist" in read.stderr, printed(read)


def test_refused_credentials(servers: dict[str, Store | str]) -> None:
    """Credentials SeaweedFS refuses (a wrong secret): reading and writing fail with the
    server's refusal (HTTP 403), and nothing is stored."""
    store = _store(servers, "seaweedfs")
    good = store.env()
    url = store.url("credentials/ds")
    proc = run_cli(["copy", str(conformance_data.write_file("types.vector.nested")), url], good)
    assert proc.returncode == 0, printed(proc)
    bad = store.env(AWS_SECRET_ACCESS_KEY="not-the-secret-0123456789")
    read = run_cli(["info", url], bad)
    assert read.returncode == 1 and "403" in read.stderr, printed(read)
    write = run_cli(
        ["copy", str(conformance_data.write_file("types.vector.nested")), store.url("credentials/new")], bad
    )
    assert write.returncode == 1 and "403" in write.stderr, printed(write)
    assert store.keys("credentials/new") == []


# ----------------------------------------------------------------------------- Python


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A NanoAOD-like RNTuple of 20,000 entries in several clusters."""
    from remote_data import nanoaod_like

    import rntuple

    path = tmp_path_factory.mktemp("python_sample") / "nano.root"
    with rntuple.recreate(path, cluster_size="256 kB") as f:
        f["Events"] = nanoaod_like(20_000, seed=3)
    return path


def _dataset_url(kind: str, servers: dict[str, Store | str], tmp_path: Path, key: str) -> str:
    """Where a test's dataset goes: a server's bucket, or a directory."""
    if kind == "directory":
        return f"ntpl+file://{tmp_path}/{key}"
    return _store(servers, kind).url(f"python/{tmp_path.name}/{key}")


# Python runs on SeaweedFS and a directory: moto serves one request at a time, about 3 ms
# each, and a 20,000-entry dataset of 1,300 objects would take 10 s there (the command's
# round trips above run on moto too).
@pytest.mark.parametrize("kind", ["seaweedfs", "directory"])
def test_python_reads_datasets(
    kind: str, servers: dict[str, Store | str], sample: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``rntuple.open(URL)`` is a file holding the one RNTuple: its arrays are the local
    file's, ``iterate`` and ``concatenate`` (with the URL's RNTuple named or not) too."""
    import awkward as ak

    import rntuple

    if kind != "directory":
        _use(_store(servers, kind), monkeypatch)
    url = _dataset_url(kind, servers, tmp_path, "nano")
    result = rntuple.merge([str(sample)], url, keep_compression=True)
    assert result.entries == 20_000 and result.output_bytes > 0
    local = rntuple.open(f"{sample}:Events").arrays()
    with rntuple.open(url) as f:
        assert f.keys() == ["Events"]
        nt = f["Events"]
        assert nt.file_path == url
        assert ak.array_equal(nt.arrays(), local)
        assert ak.array_equal(
            nt.arrays(["Jet_pt", "event"], entry_start=1234, entry_stop=15000),
            local[["Jet_pt", "event"]][1234:15000],
        )
    # Batches of at most 7000 entries, ending at cluster boundaries.
    batches = list(rntuple.iterate(url, ["Muon_eta", "MET_pt"], step_size=7000))
    assert len(batches) >= 3 and all(0 < len(b) <= 7000 for b in batches)
    assert ak.array_equal(ak.concatenate(batches), local[["Muon_eta", "MET_pt"]])
    both = rntuple.concatenate([url, {str(sample): "Events"}], ["event"])
    assert both.event.to_list() == [*range(20_000), *range(20_000)]


def test_python_dask_reads_a_dataset(
    servers: dict[str, Store | str], sample: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``rntuple.dask(URL)`` computes what the local file holds (its partitions open the
    dataset again by its URL)."""
    import awkward as ak
    import dask

    import rntuple

    _use(_store(servers, "seaweedfs"), monkeypatch)
    url = _dataset_url("seaweedfs", servers, tmp_path, "nano")
    rntuple.merge([str(sample)], url, keep_compression=True)
    lazy = rntuple.dask(url, ["Jet_pt", "event"], step_size=5000)
    assert lazy.npartitions >= 4
    with dask.config.set(scheduler="threads"):
        computed = lazy.compute()
    assert ak.array_equal(computed, rntuple.open(f"{sample}:Events").arrays(["Jet_pt", "event"]))


@pytest.mark.parametrize("kind", ["seaweedfs", "directory"])
def test_python_writes_datasets(
    kind: str, servers: dict[str, Store | str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``rntuple.recreate(URL)`` writes the dataset's one RNTuple, visible once closed;
    an exception in the ``with`` block leaves no dataset; ``rntuple.merge`` to an
    existing dataset needs ``overwrite=True``."""
    import awkward as ak
    import numpy as np

    import rntuple

    if kind != "directory":
        _use(_store(servers, kind), monkeypatch)
    url = _dataset_url(kind, servers, tmp_path, "written")
    jets = ak.Array([[float(j) for j in range(i % 5)] for i in range(1000)])
    with rntuple.recreate(url, cluster_size="4 kB") as f:
        f["Events"] = {"x": np.arange(1000), "jets": jets}
        f["Events"].extend({"x": np.arange(1000, 1500), "jets": jets[:500]})
        with pytest.raises(rntuple.InvalidArgumentError, match="holds one RNTuple"):
            f["Other"] = {"x": np.arange(3)}
        with pytest.raises(FileNotFoundError, match="no anchor"):
            rntuple.open(url)  # not visible before it is closed
    nt = rntuple.open(url)["Events"]
    assert nt.num_entries == 1500
    assert nt.arrays().x.to_list() == list(range(1500))
    assert ak.array_equal(nt.arrays().jets, ak.concatenate([jets, jets[:500]]))
    aborted = _dataset_url(kind, servers, tmp_path, "aborted")
    with pytest.raises(RuntimeError, match="in the block"), rntuple.recreate(aborted) as f:
        f["Events"] = {"x": np.arange(10)}
        raise RuntimeError("in the block")
    with pytest.raises(FileNotFoundError):
        rntuple.open(aborted)
    with pytest.raises(rntuple.InvalidArgumentError, match="both an input and the output"):
        rntuple.merge([url], url)
    other = str(conformance_data.write_file("types.vector.nested"))
    with pytest.raises(rntuple.OutputExistsError):
        rntuple.merge([other], url)
    assert rntuple.open(url)["Events"].num_entries == 1500
    replaced = rntuple.merge([other], url, overwrite=True)
    assert replaced.entries == 3 and replaced.output == url
    assert rntuple.open(url).keys() == ["ntpl"]
    with pytest.raises(rntuple.UnsupportedError, match="recreate_parallel"):
        rntuple.recreate_parallel(url, "Events", {"x": np.arange(3)})


@pytest.mark.parametrize("kind", ["seaweedfs", "directory"])
def test_python_errors(
    kind: str, servers: dict[str, Store | str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dataset that is not there is a ``FileNotFoundError`` (remote: a
    ``RemoteFileNotFoundError``) saying there is no anchor; refused credentials a
    ``PermissionError`` (``RemotePermissionError``)."""
    import rntuple

    url = _dataset_url(kind, servers, tmp_path, "absent")
    if kind == "directory":
        with pytest.raises(FileNotFoundError, match="no anchor"):
            rntuple.open(url)
        with pytest.raises(FileNotFoundError, match="no directory"):
            rntuple.open(f"ntpl+file://{tmp_path}/no/such/dir/ds")
        return
    store = _store(servers, kind)
    _use(store, monkeypatch)
    with pytest.raises(rntuple.RemoteFileNotFoundError, match="no anchor") as missing:
        rntuple.open(url)
    assert isinstance(missing.value, FileNotFoundError)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret-0123456789")
    with pytest.raises(rntuple.RemotePermissionError) as refused:
        rntuple.open(url)
    assert isinstance(refused.value, PermissionError)


# ----------------------------------------------------------------------------- worker


if __name__ == "__main__" and sys.argv[1:] == ["--root-worker"]:
    sys.exit(_root_worker())


# --------------------------------------------------------------------------------- DAOS

#: DAOS's page mappings as ``RNTUPLE_DAOS_MAPPING`` names them: ROOT main's and ROOT 6.40's.
DAOS_MAPPINGS = ["per-page", "per-cluster"]


@pytest.fixture(scope="module")
def daos_roundtrips(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, tuple[str, str]]]:
    """Every case copied by the command into ROOT's DAOS layout (a directory store at
    ``RNTUPLE_DAOS_DIR``, a pool per mapping, a container per case) and
    back into a file, under each mapping; ROOT's reading of every copy back checked."""
    conformance = conformance_data.require()
    rntuple_command()
    results: dict[str, dict[str, tuple[str, str]]] = {}
    for mapping in DAOS_MAPPINGS:
        store = tmp_path_factory.mktemp(f"daos_{mapping}")
        out = tmp_path_factory.mktemp(f"daos_back_{mapping}")
        env = clean_env({"RNTUPLE_DAOS_DIR": str(store), "RNTUPLE_DAOS_MAPPING": mapping})

        def trip(case: str, env: dict[str, str] = env, out: Path = out, mapping: str = mapping) -> str | None:
            # A container per case; the RNTuple keeps the conformance files' name.
            url = f"daos://{mapping}/{case.replace('.', '-')}:ntpl"
            up = run_cli(["copy", str(conformance / "write" / f"{case}.root"), url], env)
            if up.returncode != 0:
                return f"COPY UP exit {up.returncode}: {printed(up)}"
            down = run_cli(["copy", url, str(out / f"{case}.root")], env)
            if down.returncode != 0:
                return f"COPY DOWN exit {down.returncode}: {printed(down)}"
            return None

        cases = [c for c in ROUNDTRIP_CASES if c != ATTRIBUTES_CASE]
        with ThreadPoolExecutor(max_workers=4) as pool:
            problems = dict(zip(cases, pool.map(trip, cases), strict=True))
        results[mapping] = {c: ("COPY", p) for c, p in problems.items() if p}
        copied = {c: out / f"{c}.root" for c, p in problems.items() if p is None}
        results[mapping].update(rootdump.run_tasks(rootdump.conformance_tasks(conformance, copied)))
    return results


@pytest.mark.parametrize("case", [c for c in ROUNDTRIP_CASES if c != ATTRIBUTES_CASE])
@pytest.mark.parametrize("mapping", DAOS_MAPPINGS)
def test_daos_conformance_roundtrip(
    mapping: str, case: str, daos_roundtrips: dict[str, dict[str, tuple[str, str]]]
) -> None:
    """``rntuple copy write/<case>.root daos://POOL/<case>:ntpl`` and back: ROOT 6.40 reads
    the copy back to exactly ``read/<case>.json``, under both page mappings."""
    status, detail = daos_roundtrips[mapping][case]
    assert status == "OK", f"{mapping} {case}: {status}: {detail}"
