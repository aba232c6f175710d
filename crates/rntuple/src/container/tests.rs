//! Round trips of the container records and their error paths.

use super::cursor::{tstring_len, write_tstring, BeReader};
use super::*;
use crate::error::Error;

fn header(version: u32, end: u64) -> FileHeader {
    FileHeader {
        version,
        begin: 100,
        end,
        seek_free: end.saturating_sub(60),
        nbytes_free: 60,
        nfree: 1,
        nbytes_name: 58,
        units: if version >= FileHeader::LARGE_FILE_VERSION {
            8
        } else {
            4
        },
        compress: 505,
        seek_info: end.saturating_sub(600),
        nbytes_info: 540,
        uuid_version: 1,
        uuid: [7; 16],
    }
}

fn key(version: u16, seek: u64, name: &str) -> KeyHeader {
    let mut k = KeyHeader {
        nbytes: 0,
        version,
        obj_len: 78,
        datime: 0x1234_5678,
        key_len: 0,
        cycle: 3,
        seek_key: seek,
        seek_pdir: 100,
        class_name: "ROOT::RNTuple".into(),
        name: name.into(),
        title: String::new(),
    };
    k.key_len = k.encoded_len() as u16;
    k.nbytes = u32::from(k.key_len) + 78;
    k
}

#[test]
fn file_header_round_trip() {
    for (version, end, len) in [
        (64000, 5000, FileHeader::SMALL_LEN),
        (1_064_000, 5 << 30, FileHeader::LARGE_LEN),
    ] {
        let h = header(version, end);
        let mut out = Vec::new();
        h.write(&mut out).unwrap();
        assert_eq!(out.len(), len);
        assert_eq!(h.encoded_len(), len);
        assert_eq!(FileHeader::parse(&out).unwrap(), h);
        for cut in 0..out.len() {
            assert!(FileHeader::parse(&out[..cut]).is_err());
        }
    }
    // A small header cannot hold a pointer past 2 GiB.
    assert!(header(64000, 3 << 30).write(&mut Vec::new()).is_err());
    // A negative 32-bit pointer is corrupt.
    let mut out = Vec::new();
    header(64000, 5000).write(&mut out).unwrap();
    out[12] = 0x80;
    assert!(matches!(
        FileHeader::parse(&out),
        Err(Error::Corrupt { .. })
    ));
}

#[test]
fn key_header_round_trip() {
    for (version, seek, fixed) in [(4, 1000, 26), (1004, 7 << 30, 34)] {
        let k = key(version, seek, "ntpl");
        let mut out = Vec::new();
        k.write(&mut out).unwrap();
        assert_eq!(out.len(), fixed + 1 + 13 + 1 + 4 + 1);
        assert_eq!(KeyHeader::parse(&out, 0).unwrap(), k);
        assert_eq!(k.data_offset().unwrap(), seek + u64::from(k.key_len));
        assert_eq!(k.stored_len().unwrap(), 78);
        assert!(!k.is_compressed().unwrap());
        for cut in 0..out.len() {
            assert!(KeyHeader::parse(&out[..cut], 0).is_err());
        }
    }
    assert!(key(4, 3 << 30, "x").write(&mut Vec::new()).is_err());
    // KeyLen shorter than the fields.
    let mut k = key(4, 1000, "ntpl");
    k.key_len -= 1;
    let mut out = Vec::new();
    k.write(&mut out).unwrap();
    assert!(matches!(
        KeyHeader::parse(&out, 0),
        Err(Error::Corrupt { .. })
    ));
    // KeyLen longer than the fields: padding is skipped.
    let mut k = key(4, 1000, "ntpl");
    k.key_len += 2;
    k.nbytes += 2;
    let mut out = Vec::new();
    k.write(&mut out).unwrap();
    out.extend_from_slice(&[0, 0]);
    assert_eq!(KeyHeader::parse(&out, 0).unwrap(), k);
    // Nbytes smaller than KeyLen.
    let mut k = key(4, 1000, "ntpl");
    k.nbytes = 3;
    let mut out = Vec::new();
    k.write(&mut out).unwrap();
    assert!(KeyHeader::parse(&out, 0).is_err());
}

#[test]
fn long_tstrings() {
    let long = "x".repeat(300);
    let mut out = Vec::new();
    write_tstring(&mut out, &long);
    assert_eq!(out.len(), tstring_len(&long));
    assert_eq!(&out[..5], &[255, 0, 0, 1, 44]);
    assert_eq!(BeReader::new(&out, 0, "s").tstring().unwrap(), long);
    // A long length that the data does not hold.
    let bad = [255u8, 0x7f, 0xff, 0xff, 0xff, b'a'];
    assert!(matches!(
        BeReader::new(&bad, 0, "s").tstring(),
        Err(Error::Truncated { .. })
    ));
    // A key with a long title round-trips.
    let mut k = key(1004, 100, "n");
    k.title = long;
    k.key_len = k.encoded_len() as u16;
    k.nbytes = u32::from(k.key_len);
    let mut out = Vec::new();
    k.write(&mut out).unwrap();
    assert_eq!(KeyHeader::parse(&out, 0).unwrap(), k);
}

#[test]
fn directory_record_round_trip() {
    for (version, seek_keys) in [(5u16, 4000u64), (1005, 9 << 30)] {
        let d = DirectoryRecord {
            version,
            ctime: 1,
            mtime: 2,
            nbytes_keys: 300,
            nbytes_name: 58,
            seek_dir: 100,
            seek_parent: 0,
            seek_keys,
            uuid_version: 1,
            uuid: [3; 16],
        };
        let mut out = Vec::new();
        d.write(&mut out).unwrap();
        assert_eq!(out.len(), DirectoryRecord::ENCODED_LEN);
        assert_eq!(DirectoryRecord::parse(&out, 0).unwrap(), d);
        let fixed = if d.is_large() {
            DirectoryRecord::LARGE_FIXED_LEN
        } else {
            DirectoryRecord::SMALL_FIXED_LEN
        };
        for cut in 0..fixed {
            assert!(DirectoryRecord::parse(&out[..cut], 0).is_err());
        }
        // Without the UUID the record still parses.
        let short = DirectoryRecord::parse(&out[..fixed], 0).unwrap();
        assert_eq!(short.seek_keys, seek_keys);
    }
}

#[test]
fn keys_list_round_trip_and_bounds() {
    let header = key(4, 5000, "file.root");
    let keys = vec![key(4, 1000, "a"), key(1004, 8 << 30, "b")];
    let mut out = Vec::new();
    write_keys_list(&mut out, &header, &keys).unwrap();
    let (h, k) = parse_keys_list(&out, 5000).unwrap();
    assert_eq!(h, header);
    assert_eq!(k, keys);
    // A huge key count is refused before allocating.
    let count_at = usize::from(header.key_len);
    let mut bad = out.clone();
    bad[count_at..count_at + 4].copy_from_slice(&i32::MAX.to_be_bytes());
    assert!(matches!(
        parse_keys_list(&bad, 5000),
        Err(Error::Truncated { .. })
    ));
    bad[count_at..count_at + 4].copy_from_slice(&(-1i32).to_be_bytes());
    assert!(matches!(
        parse_keys_list(&bad, 5000),
        Err(Error::Corrupt { .. })
    ));
    for cut in 0..out.len() {
        assert!(parse_keys_list(&out[..cut], 5000).is_err());
    }
}

mod writer_tests {
    use crate::compression::CompressionSettings;
    use crate::container::{
        datime_from_unix, streamer_info_list, FileWriter, KeyHeader, StreamerInfo,
    };
    use std::io::Cursor;

    /// The StreamerInfo object of `tests/data/events_uncompressed.root` (written by ROOT
    /// 6.40, uncompressed): key header of 72 bytes at 32819, 1254 bytes of object.
    #[test]
    fn streamer_info_matches_root() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/events_uncompressed.root"
        );
        let data = std::fs::read(path).unwrap();
        let key = KeyHeader::parse(&data[32819..], 32819).unwrap();
        assert_eq!(key.class_name, "TList");
        let start = 32819 + usize::from(key.key_len);
        let root = &data[start..start + key.obj_len as usize];
        let ours = streamer_info_list(&[StreamerInfo::rntuple_anchor()], key.key_len).unwrap();
        assert_eq!(ours.len(), root.len());
        assert_eq!(ours, root);
    }

    #[test]
    fn datime_packing() {
        // 2025-03-04 05:06:07 UTC
        let t = 1_741_064_767;
        assert_eq!(
            datime_from_unix(t),
            (30 << 26) | (3 << 22) | (4 << 17) | (5 << 12) | (6 << 6) | 7
        );
    }

    #[test]
    fn gap_records_and_positions() {
        let mut w = FileWriter::new(
            Cursor::new(Vec::new()),
            "t.root",
            CompressionSettings::UNCOMPRESSED,
        )
        .unwrap();
        let predicted = w.next_blob_payload_offset(20_000, 4096).unwrap();
        let payload: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
        assert_eq!(w.write_blob(&payload, 4096).unwrap(), predicted);
        let predicted = w.next_blob_payload_offset(10, 4096).unwrap();
        assert_eq!(w.write_blob(&payload[..10], 4096).unwrap(), predicted);
        assert!(w.skip_to(w.position() + 2).is_err());
        let target = w.position() + 1000;
        w.skip_to(target).unwrap();
        assert_eq!(w.position(), target);
    }
}
