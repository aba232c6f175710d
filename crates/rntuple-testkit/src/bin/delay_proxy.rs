//! A TCP proxy on loopback that delays every byte by a fixed time in each direction (and a
//! new connection's first byte by one round trip more, TCP's handshake): a network with
//! a round-trip latency of twice that, for tests where the kernel offers no
//! `tc netem` (this proxy holds data in memory, so unlike a real link it does not limit
//! the bandwidth-delay product; it adds the latency every request pays).
//!
//! `delay_proxy LISTEN_PORT TARGET_HOST:PORT ONE_WAY_MS` prints `ready` when listening and
//! runs until killed.
//!
//! The proxy shares the machine's cores with the reader and the server under test, so it
//! moves bytes with `splice(2)` through pipes (no copies through its own memory): each
//! chunk waits in a pipe of its own until it is due.

// Not library code: stops at the first failure; its data is small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation)]

use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// The most a chunk holds: the largest pipe an unprivileged process may ask for by default.
const CHUNK: usize = 1 << 20;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(port), Some(target), Some(ms)) = (args.first(), args.get(1), args.get(2)) else {
        eprintln!("usage: delay_proxy LISTEN_PORT TARGET_HOST:PORT ONE_WAY_MS");
        std::process::exit(2);
    };
    let delay = Duration::from_millis(ms.parse().unwrap_or(10));
    let listener = match TcpListener::bind(("127.0.0.1", port.parse().unwrap_or(0))) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("delay_proxy: cannot listen on {port}: {e}");
            std::process::exit(1);
        }
    };
    println!("ready");
    for client in listener.incoming().flatten() {
        let target = target.clone();
        thread::spawn(move || {
            // The client's connect returned at once; on a real link TCP's handshake
            // takes a round trip before the first byte can go: the bytes wait for it.
            thread::sleep(2 * delay);
            if let Ok(server) = TcpStream::connect(&target) {
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                let (c2, s2) = match (client.try_clone(), server.try_clone()) {
                    (Ok(c), Ok(s)) => (c, s),
                    _ => return,
                };
                let up = thread::spawn(move || pump(client, server, delay));
                pump(s2, c2, delay);
                let _ = up.join();
            }
        });
    }
}

/// A pipe that holds one chunk while it waits.
struct Pipe {
    read: OwnedFd,
    write: OwnedFd,
}

impl Pipe {
    fn new() -> std::io::Result<Pipe> {
        let mut fds = [0 as RawFd; 2];
        // SAFETY: `fds` is a valid array of two descriptors for pipe2 to fill.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: pipe2 succeeded, so both descriptors are open and owned by nobody else.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // A larger pipe holds a whole chunk; if refused, chunks are just smaller.
        // SAFETY: F_SETPIPE_SZ on a pipe descriptor we own.
        unsafe { libc::fcntl(write.as_raw_fd(), libc::F_SETPIPE_SZ, CHUNK as libc::c_int) };
        Ok(Pipe { read, write })
    }
}

/// Moves up to `len` bytes from `from` to `to` with splice(2); returns the count.
fn splice(from: RawFd, to: RawFd, len: usize) -> std::io::Result<usize> {
    // SAFETY: both descriptors are open for the duration of the call; null offsets mean
    // "the current position", as splice requires for pipes and sockets.
    let n = unsafe {
        libc::splice(
            from,
            std::ptr::null_mut(),
            to,
            std::ptr::null_mut(),
            len,
            libc::SPLICE_F_MOVE,
        )
    };
    usize::try_from(n).map_err(|_| std::io::Error::last_os_error())
}

/// Copies `from` to `to`, each chunk sent `delay` after it arrived. A chunk waits in a
/// pipe; emptied pipes go back to the reader.
fn pump(from: TcpStream, to: TcpStream, delay: Duration) {
    let (tx, rx) = mpsc::channel::<(Instant, Option<Pipe>, usize)>();
    let (give_back, returned) = mpsc::channel::<Pipe>();
    let out = to.as_raw_fd();
    let writer = thread::spawn(move || {
        'chunks: for (due, pipe, n) in rx {
            let now = Instant::now();
            if due > now {
                thread::sleep(due - now);
            }
            let Some(pipe) = pipe else { break };
            let mut left = n;
            while left > 0 {
                match splice(pipe.read.as_raw_fd(), out, left) {
                    Ok(0) | Err(_) => break 'chunks,
                    Ok(moved) => left -= moved,
                }
            }
            let _ = give_back.send(pipe);
        }
        let _ = to.shutdown(Shutdown::Write);
    });
    loop {
        let Some(pipe) = returned.try_recv().ok().or_else(|| Pipe::new().ok()) else {
            break;
        };
        match splice(from.as_raw_fd(), pipe.write.as_raw_fd(), CHUNK) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if tx.send((Instant::now() + delay, Some(pipe), n)).is_err() {
                    break;
                }
            }
        }
    }
    let _ = tx.send((Instant::now() + delay, None, 0));
    drop(tx);
    let _ = writer.join();
    let _ = from.shutdown(Shutdown::Read);
}
