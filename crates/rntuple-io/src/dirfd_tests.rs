//! Tests of `dirfd`: links never followed, special files never opened (nor waited on),
//! the private policy's owners, modes and file systems, temporaries published whole.

use super::*;
use std::fs;
use std::io::Read;
use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::sync::mpsc;
use std::time::Duration;

fn mkfifo(path: &Path) {
    rfs::mknodat(
        rfs::CWD,
        path,
        FileType::Fifo,
        Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
}

/// `f`'s result, run in a thread; fails when it does not end within a minute (an open
/// of a FIFO that blocks would never end).
fn bounded<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("blocked: a FIFO was opened")
}

/// The refusal of `result`, which must be an error carrying one.
fn refusal_of<T: std::fmt::Debug>(result: io::Result<T>) -> Refusal {
    let err = result.unwrap_err();
    refusal(&err).unwrap_or_else(|| panic!("not a refusal: {err:?}"))
}

#[test]
fn special_files_and_links_are_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("secret"), b"not ours").unwrap();
    fs::write(dir.path().join("plain"), b"ours").unwrap();
    mkfifo(&dir.path().join("fifo"));
    let _socket = std::os::unix::net::UnixListener::bind(dir.path().join("socket")).unwrap();
    symlink(outside.path().join("secret"), dir.path().join("link")).unwrap();
    symlink(outside.path(), dir.path().join("linkdir")).unwrap();
    fs::create_dir(dir.path().join("sub")).unwrap();
    let root = Dir::open_path(dir.path(), Policy::Anyone).unwrap();
    let mut text = String::new();
    root.open_file("plain")
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    assert_eq!(text, "ours");
    assert_eq!(root.stat_file("plain").unwrap().size, 4);
    assert_eq!(
        root.open_file("missing").unwrap_err().kind(),
        io::ErrorKind::NotFound
    );
    assert!(existing(root.open_file("missing")).unwrap().is_none());
    let root = std::sync::Arc::new(root);
    for (name, said) in [
        (
            "fifo",
            "a FIFO (named pipe) where a regular file belongs (never opened",
        ),
        (
            "socket",
            "a socket where a regular file belongs (never opened",
        ),
        (
            "link",
            "a symbolic link where a regular file belongs (never followed)",
        ),
        ("sub", "a directory where a regular file belongs"),
    ] {
        let opened = bounded({
            let root = root.clone();
            move || root.open_file(name).map(drop)
        });
        let err = opened.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{name}");
        assert!(err.to_string().contains(said), "{name}: {err}");
        let err = root.stat_file(name).unwrap_err().to_string();
        assert!(err.contains(said), "{name}: {err}");
        // Nor is a lock opened there (never through a link, never on a FIFO).
        let locked = bounded({
            let root = root.clone();
            move || root.open_lock(name).map(drop)
        });
        assert!(refusal(&locked.unwrap_err()).is_some(), "{name}");
    }
    let dev = Dir::open_path(Path::new("/dev"), Policy::Anyone).unwrap();
    let err = dev.open_file("null").unwrap_err().to_string();
    assert!(err.contains("a character device where"), "{err}");
    assert_eq!(
        refusal_of(root.open_dir("linkdir", false)),
        Refusal::Kind {
            found: FileType::Symlink,
            want: Want::Dir
        }
    );
    let err = root.open_dir("plain", true).unwrap_err().to_string();
    assert!(
        err.contains("a regular file where a directory belongs"),
        "{err}"
    );
    // Writing over a link replaces the link, never the file it points to.
    root.write_file("link", b"new", ".tmp", false).unwrap();
    assert_eq!(
        fs::read(outside.path().join("secret")).unwrap(),
        b"not ours"
    );
    assert_eq!(fs::read(dir.path().join("link")).unwrap(), b"new");
    // Removing a link to a directory removes the link.
    root.unlink("linkdir").unwrap();
    assert!(outside.path().join("secret").exists());
    let mut names: Vec<String> = root.names().unwrap().into_iter().map(|(n, _)| n).collect();
    names.sort();
    assert_eq!(names, ["fifo", "link", "plain", "socket", "sub"]);
}

#[test]
fn names_are_single_components() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("a/b")).unwrap();
    fs::write(dir.path().join("a/b/f"), b"x").unwrap();
    let root = Dir::open_path(&dir.path().join("a"), Policy::Anyone).unwrap();
    for name in ["b/f", "..", ".", ""] {
        let err = root.open_file(name).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{name:?}");
        assert!(err.to_string().contains("is not a file name"), "{err}");
        assert!(root.open_dir(name, false).is_err(), "{name:?}");
        assert!(root.unlink(name).is_err(), "{name:?}");
        assert!(!root.remove_empty_dir(name), "{name:?}");
    }
    assert!(dir.path().join("a/b/f").exists());
}

#[test]
fn listing_keeps_raw_names_and_their_types() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let raw = OsStr::from_bytes(b"not-utf8-\xff");
    fs::write(dir.path().join(raw), b"x").unwrap();
    fs::create_dir(dir.path().join("d")).unwrap();
    symlink("d", dir.path().join("l")).unwrap();
    let root = Dir::open_path(dir.path(), Policy::Anyone).unwrap();
    let mut listed = root.list().unwrap();
    listed.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        listed,
        [
            (OsString::from("d"), FileType::Directory),
            (OsString::from("l"), FileType::Symlink),
            (raw.to_os_string(), FileType::RegularFile),
        ]
    );
    let mut names = root.names().unwrap();
    names.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        names,
        [
            ("d".to_string(), FileType::Directory),
            ("l".to_string(), FileType::Symlink)
        ]
    );
}

#[test]
fn the_private_policy_wants_the_users_own_on_one_file_system() {
    let dir = tempfile::tempdir().unwrap();
    let top = dir.path().join("top");
    fs::create_dir(&top).unwrap();
    fs::set_permissions(&top, fs::Permissions::from_mode(0o700)).unwrap();
    let root = Dir::open_path(&top, Policy::Private).unwrap();
    // What it makes is the user's alone, whatever the umask.
    let made = root.open_dir("made", true).unwrap();
    let file = made.create_new("f").unwrap();
    drop(file);
    let meta = fs::symlink_metadata(top.join("made")).unwrap();
    assert_eq!(meta.mode() & 0o7777, 0o700);
    assert_eq!(meta.uid(), effective_uid());
    let meta = fs::symlink_metadata(top.join("made/f")).unwrap();
    assert_eq!(meta.mode() & 0o7777, 0o600);
    assert!(made.open_file("f").is_ok());
    // Another user's, or one writable by its group or others: refused, by kind.
    fs::write(top.join("theirs"), b"x").unwrap();
    std::os::unix::fs::chown(top.join("theirs"), Some(65_534), Some(65_534))
        .expect("the tests run as root: chown to another user");
    let err = root.open_file("theirs").unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::PermissionDenied);
    assert_eq!(refusal(&err), Some(Refusal::Foreign(65_534)));
    assert!(
        err.to_string().contains("owned by uid 65534, not by you"),
        "{err}"
    );
    fs::create_dir(top.join("open")).unwrap();
    fs::set_permissions(top.join("open"), fs::Permissions::from_mode(0o777)).unwrap();
    let what = refusal_of(root.open_dir("open", false));
    assert_eq!(what, Refusal::OpenToOthers(0o40777));
    assert!(what.to_string().contains("writable by others (mode 0777)"));
    assert!(!what.is_wrong_kind());
    fs::write(top.join("group"), b"x").unwrap();
    fs::set_permissions(top.join("group"), fs::Permissions::from_mode(0o620)).unwrap();
    let what = refusal_of(root.open_file("group"));
    assert_eq!(what.to_string(), "writable by its group (mode 0620)");
    // The same files are anyone's to read under the other policy.
    let anyone = Dir::open_path(&top, Policy::Anyone).unwrap();
    assert!(anyone.open_file("theirs").is_ok());
    assert!(anyone.open_dir("open", false).is_ok());
    // A directory of another user's given by path is refused too.
    let err = Dir::open_path(&top.join("open"), Policy::Private).unwrap_err();
    assert_eq!(refusal(&err), Some(Refusal::OpenToOthers(0o40777)));
    // Another file system mounted inside is not entered (`/proc` on `/`).
    let slash = Dir::open_path(Path::new("/"), Policy::Private).unwrap();
    let what = refusal_of(slash.open_dir("proc", false));
    assert_eq!(what, Refusal::OtherDevice);
    assert!(what.is_wrong_kind());
    assert!(Dir::open_path(Path::new("/"), Policy::Anyone)
        .unwrap()
        .open_dir("proc", false)
        .is_ok());
}

#[test]
fn the_open_policy_makes_what_the_umask_allows() {
    let dir = tempfile::tempdir().unwrap();
    // What `std` makes (mode 0666 and 0777 less the umask) is the independent measure.
    fs::write(dir.path().join("std-file"), b"").unwrap();
    fs::create_dir(dir.path().join("std-dir")).unwrap();
    let mode = |name: &str| fs::symlink_metadata(dir.path().join(name)).unwrap().mode() & 0o7777;
    let root = Dir::open_path(dir.path(), Policy::Anyone).unwrap();
    root.write_file("f", b"x", ".tmp", true).unwrap();
    root.open_dir("d", true).unwrap();
    assert_eq!(mode("f"), mode("std-file"));
    assert_eq!(mode("d"), mode("std-dir"));
}

#[test]
fn temporaries_are_published_whole_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let root = Dir::open_path(dir.path(), Policy::Private).unwrap();
    let tmp = root.open_dir("tmp", true).unwrap();
    let dest = root.open_dir("dest", true).unwrap();
    let mut n = 0;
    let mut names = || {
        n += 1;
        format!("t{n}")
    };
    // A failed fill leaves no temporary file.
    let failed = tmp.write_temporary(
        &mut names,
        |file| {
            file.write_all(b"half")?;
            Err(io::Error::other("disk full"))
        },
        false,
    );
    assert_eq!(failed.unwrap_err().to_string(), "disk full");
    assert!(tmp.list().unwrap().is_empty());
    // A name taken is passed over.
    fs::write(dir.path().join("tmp/t2"), b"someone else's").unwrap();
    let temp = tmp
        .write_temporary(&mut names, |file| file.write_all(b"first"), false)
        .unwrap();
    assert_eq!(temp, "t3");
    assert!(tmp.publish(&temp, &dest, "x", Publish::New, false).unwrap());
    // New never replaces: the first writer wins, the second's file is dropped.
    let temp = tmp
        .write_temporary(&mut names, |file| file.write_all(b"second"), true)
        .unwrap();
    assert!(!tmp.publish(&temp, &dest, "x", Publish::New, true).unwrap());
    assert_eq!(fs::read(dir.path().join("dest/x")).unwrap(), b"first");
    // Replace does.
    let temp = tmp
        .write_temporary(&mut names, |file| file.write_all(b"third"), false)
        .unwrap();
    assert!(tmp
        .publish(&temp, &dest, "x", Publish::Replace, false)
        .unwrap());
    assert_eq!(fs::read(dir.path().join("dest/x")).unwrap(), b"third");
    // A failed publish drops the temporary file too (a directory is in the way).
    fs::create_dir(dir.path().join("dest/busy")).unwrap();
    fs::write(dir.path().join("dest/busy/inside"), b"").unwrap();
    let temp = tmp
        .write_temporary(&mut names, |file| file.write_all(b"fourth"), false)
        .unwrap();
    assert!(tmp
        .publish(&temp, &dest, "busy", Publish::Replace, false)
        .is_err());
    let left: Vec<OsString> = tmp.list().unwrap().into_iter().map(|(n, _)| n).collect();
    assert_eq!(left, [OsString::from("t2")]);
    // Temporary names of one file differ, and stay file names when the file's is long.
    let a = temporary_name("obj", ".tmp");
    assert!(
        a.starts_with(".obj.") && a.ends_with(".tmp") && a.len() == 21,
        "{a}"
    );
    assert_ne!(a, temporary_name("obj", ".tmp"));
    assert_eq!(temporary_name(&"n".repeat(250), ".tmp").len(), 17);
}

#[test]
fn directories_are_made_once_and_exchanged_whole() {
    let dir = tempfile::tempdir().unwrap();
    let root = Dir::open_path(dir.path(), Policy::Anyone).unwrap();
    let a = root.create_dir("a").unwrap();
    a.write_file("v", b"a", ".tmp", false).unwrap();
    assert_eq!(
        root.create_dir("a").unwrap_err().kind(),
        io::ErrorKind::AlreadyExists
    );
    let chain = root
        .try_clone()
        .unwrap()
        .open_dirs(&["b", "c"], true)
        .unwrap();
    assert_eq!(chain.len(), 3);
    assert_eq!(chain[0].id(), root.id());
    chain[2].write_file("v", b"c", ".tmp", false).unwrap();
    let missing = root.try_clone().unwrap().open_dirs(&["b", "none"], false);
    assert!(existing(missing).unwrap().is_none());
    #[cfg(any(target_os = "linux", target_os = "android", target_vendor = "apple"))]
    {
        root.exchange("a", &chain[1], "c").unwrap();
        assert_eq!(fs::read(dir.path().join("a/v")).unwrap(), b"c");
        assert_eq!(fs::read(dir.path().join("b/c/v")).unwrap(), b"a");
    }
    // Removing a directory that is not empty fails; an empty one goes.
    assert!(!root.remove_empty_dir("b"));
    root.open_dir("e", true).unwrap();
    assert!(root.remove_empty_dir("e"));
    assert!(!dir.path().join("e").exists());
}

#[test]
fn trees_are_removed_by_handle_never_through_links() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("keep"), b"keep").unwrap();
    let tree = dir.path().join("tree");
    fs::create_dir_all(tree.join("a/b")).unwrap();
    fs::write(tree.join("a/b/file"), b"12345").unwrap();
    fs::write(tree.join("top"), b"123").unwrap();
    symlink(outside.path(), tree.join("a/linkdir")).unwrap();
    symlink(outside.path().join("keep"), tree.join("a/b/linkfile")).unwrap();
    mkfifo(&tree.join("a/fifo"));
    let root = Dir::open_path(dir.path(), Policy::Private).unwrap();
    // Only regular files count (links and FIFOs not, nor what links point to).
    assert_eq!(root.open_dir("tree", false).unwrap().tree_bytes(), 8);
    root.remove_tree("tree").unwrap();
    assert!(!tree.exists());
    assert_eq!(fs::read(outside.path().join("keep")).unwrap(), b"keep");
    assert_eq!(
        root.remove_tree("tree").unwrap_err().kind(),
        io::ErrorKind::NotFound
    );
    // Deeper than MAX_DEPTH: left, with an error.
    let mut deep = dir.path().join("deep");
    for _ in 0..=MAX_DEPTH {
        deep.push("d");
    }
    fs::create_dir_all(&deep).unwrap();
    let err = root.remove_tree("deep").unwrap_err();
    assert!(err.to_string().contains("directories deep"), "{err}");
    assert!(dir.path().join("deep").exists());
}

#[test]
fn file_types_in_words() {
    assert_eq!(describe(FileType::Fifo), "a FIFO (named pipe)");
    assert_eq!(describe_briefly(FileType::Fifo), "a FIFO");
    assert_eq!(describe_briefly(FileType::Socket), "a socket");
    assert_eq!(
        describe_briefly(FileType::Unknown),
        "a file of unknown type"
    );
    let what = Refusal::Kind {
        found: FileType::BlockDevice,
        want: Want::File,
    };
    assert!(what.is_wrong_kind());
    assert_eq!(refused(what).kind(), io::ErrorKind::InvalidInput);
    assert_eq!(
        what.to_string(),
        "a block device where a regular file belongs \
         (never opened: special files could block the read or have side effects)"
    );
}
