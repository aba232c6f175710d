//! A TCP proxy on loopback that delays every byte by a fixed time in each direction: a
//! network with a round-trip latency of twice that, for tests where the kernel offers no
//! `tc netem` (this proxy holds data in memory, so unlike a real link it does not limit
//! the bandwidth-delay product; it adds the latency every request pays).
//!
//! `delay_proxy LISTEN_PORT TARGET_HOST:PORT ONE_WAY_MS` prints `ready` when listening and
//! runs until killed.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

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

/// Copies `from` to `to`, each chunk sent `delay` after it arrived.
fn pump(mut from: TcpStream, mut to: TcpStream, delay: Duration) {
    let (tx, rx) = mpsc::channel::<(Instant, Vec<u8>)>();
    let writer = thread::spawn(move || {
        for (due, chunk) in rx {
            let now = Instant::now();
            if due > now {
                thread::sleep(due - now);
            }
            if chunk.is_empty() || to.write_all(&chunk).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
    loop {
        // Read straight into the chunk that is handed on: one copy in, one copy out.
        let mut chunk = vec![0u8; 1 << 20];
        match from.read(&mut chunk) {
            Ok(0) | Err(_) => {
                let _ = tx.send((Instant::now() + delay, Vec::new()));
                break;
            }
            Ok(n) => {
                chunk.truncate(n);
                if tx.send((Instant::now() + delay, chunk)).is_err() {
                    break;
                }
            }
        }
    }
    drop(tx);
    let _ = writer.join();
    let _ = from.shutdown(Shutdown::Read);
}
