"""The NanoAOD-like schema of the benchmark dataset, shared by the generator and the tasks.

Names and C++ types follow CMS NanoAOD v9 (the Analysis Grand Challenge ttbar files):
flat fields such as ``Jet_pt`` (``std::vector<float>`` in the RNTuple, ``Jet_pt[nJet]/F``
in the TTree) next to their ``nJet`` counters (``std::int32_t``), scalars for run,
luminosity block, event, MET, primary vertex and trigger flags.
"""

from __future__ import annotations

from dataclasses import dataclass

# C++ type -> TTree leaf code.
LEAF_CODE = {
    "float": "F",
    "std::int32_t": "I",
    "std::uint32_t": "i",
    "std::uint64_t": "l",
    "std::uint8_t": "b",
    "bool": "O",
}


@dataclass(frozen=True)
class Collection:
    """A NanoAOD collection: counter ``n<name>``, fields ``<name>_<member>`` of at most ``max`` items."""

    name: str
    max: int
    members: tuple[tuple[str, str], ...]  # (member, C++ type)

    @property
    def counter(self) -> str:
        """The name of the counter field (``nJet``)."""
        return f"n{self.name}"

    def fields(self) -> list[tuple[str, str]]:
        """``(field name, C++ element type)`` of every member."""
        return [(f"{self.name}_{m}", t) for m, t in self.members]


F, I32, U8, B = "float", "std::int32_t", "std::uint8_t", "bool"

COLLECTIONS: tuple[Collection, ...] = (
    Collection(
        "Jet",
        12,
        (
            ("pt", F),
            ("eta", F),
            ("phi", F),
            ("mass", F),
            ("btagCSVV2", F),
            ("btagDeepB", F),
            ("btagDeepFlavB", F),
            ("qgl", F),
            ("area", F),
            ("chEmEF", F),
            ("neEmEF", F),
            ("rawFactor", F),
            ("jetId", I32),
            ("puId", I32),
            ("hadronFlavour", I32),
            ("nConstituents", U8),
        ),
    ),
    Collection(
        "Electron",
        8,
        (
            ("pt", F),
            ("eta", F),
            ("phi", F),
            ("mass", F),
            ("charge", I32),
            ("cutBased", I32),
            ("dxy", F),
            ("dz", F),
            ("pfRelIso03_all", F),
            ("sip3d", F),
            ("mvaFall17V2Iso_WP80", B),
            ("tightCharge", I32),
        ),
    ),
    Collection(
        "Muon",
        8,
        (
            ("pt", F),
            ("eta", F),
            ("phi", F),
            ("mass", F),
            ("charge", I32),
            ("tightId", B),
            ("looseId", B),
            ("pfRelIso04_all", F),
            ("dxy", F),
            ("dz", F),
            ("sip3d", F),
            ("nStations", I32),
        ),
    ),
    Collection(
        "Photon",
        8,
        (
            ("pt", F),
            ("eta", F),
            ("phi", F),
            ("mass", F),
            ("cutBased", I32),
            ("pfRelIso03_all", F),
            ("r9", F),
            ("mvaID_WP80", B),
        ),
    ),
    Collection(
        "Tau",
        8,
        (
            ("pt", F),
            ("eta", F),
            ("phi", F),
            ("mass", F),
            ("charge", I32),
            ("decayMode", I32),
            ("idDeepTau2017v2p1VSjet", U8),
            ("dz", F),
        ),
    ),
    Collection(
        "GenPart",
        40,
        (
            ("pt", F),
            ("eta", F),
            ("phi", F),
            ("mass", F),
            ("pdgId", I32),
            ("status", I32),
            ("statusFlags", I32),
            ("genPartIdxMother", I32),
        ),
    ),
)

TRIGGERS: tuple[str, ...] = (
    "HLT_IsoMu24",
    "HLT_IsoMu27",
    "HLT_Mu50",
    "HLT_Ele32_WPTight_Gsf",
    "HLT_Ele35_WPTight_Gsf",
    "HLT_Ele23_Ele12_CaloIdL_TrackIdL_IsoVL",
    "HLT_Mu17_TrkIsoVVL_Mu8_TrkIsoVVL_DZ_Mass8",
    "HLT_PFHT1050",
    "HLT_PFJet500",
    "HLT_AK8PFJet400",
    "HLT_PFMET120_PFMHT120_IDTight",
    "HLT_Photon200",
    "HLT_DoubleEle25_CaloIdL_MW",
    "Flag_goodVertices",
    "Flag_globalSuperTightHalo2016Filter",
    "Flag_HBHENoiseFilter",
    "Flag_HBHENoiseIsoFilter",
    "Flag_EcalDeadCellTriggerPrimitiveFilter",
    "Flag_BadPFMuonFilter",
    "Flag_eeBadScFilter",
)

# Scalars other than the counters and trigger flags, in field order.
SCALARS: tuple[tuple[str, str], ...] = (
    ("run", "std::uint32_t"),
    ("luminosityBlock", "std::uint32_t"),
    ("event", "std::uint64_t"),
    ("genWeight", F),
    ("MET_pt", F),
    ("MET_phi", F),
    ("MET_sumEt", F),
    ("MET_significance", F),
    ("PuppiMET_pt", F),
    ("PuppiMET_phi", F),
    ("PuppiMET_sumEt", F),
    ("PV_npvs", I32),
    ("PV_npvsGood", I32),
    ("PV_z", F),
    ("PV_chi2", F),
)

# The fields an AGC-style ttbar analysis reads: the read_subset task and the agc task.
ANALYSIS_FIELDS: tuple[str, ...] = (
    "Jet_pt",
    "Jet_eta",
    "Jet_phi",
    "Jet_mass",
    "Jet_btagCSVV2",
    "Electron_pt",
    "Electron_eta",
    "Electron_cutBased",
    "Muon_pt",
    "Muon_eta",
    "Muon_tightId",
    "Muon_pfRelIso04_all",
)


def all_fields() -> list[tuple[str, str, str | None]]:
    """Every field as ``(name, C++ type of a value or element, collection name or None)``,
    in the order the generator creates them."""
    out: list[tuple[str, str, str | None]] = [(n, t, None) for n, t in SCALARS]
    for c in COLLECTIONS:
        out.append((c.counter, I32, None))
    out.extend((t, B, None) for t in TRIGGERS)
    for c in COLLECTIONS:
        out.extend((n, t, c.name) for n, t in c.fields())
    return out


def field_names() -> list[str]:
    """The names of all fields."""
    return [n for n, _, _ in all_fields()]
