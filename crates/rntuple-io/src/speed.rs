//! The low-speed limit of [`NetworkOptions`] (curl's `--speed-limit` and
//! `--speed-time`): an answer that keeps moving, but too slowly, is given up. The first-byte
//! and idle timeouts bound single waits; this bounds the rate, so a server that sends a
//! byte a second cannot hold a reader for as long as it likes.
//!
//! The windows are counted from the answer's first byte, one after the other (not
//! sliding): each must bring `speed_limit * speed_time` bytes, so an answer of `n` bytes
//! takes at most about `n / speed_limit + speed_time` seconds. Every source measures its
//! answers with a [`SpeedMeter`]: HTTP and S3 per response body, XRootD per exchange
//! (from the first byte of the first response to the last of the last).

use super::options::NetworkOptions;
use std::time::{Duration, Instant};

/// The low-speed limit ran out (see [`SpeedMeter::record`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TooSlow;

/// Measures one answer against the low-speed limit.
#[derive(Debug, Clone)]
pub(crate) struct SpeedMeter {
    /// Bytes each window must bring (0: no limit).
    needed: u64,
    window: Duration,
    /// Where the current window started.
    start: Instant,
    /// Bytes that arrived in the current window.
    seen: u64,
}

impl SpeedMeter {
    /// A meter of `network`'s low-speed limit whose first window starts now.
    pub(crate) fn start(network: &NetworkOptions) -> SpeedMeter {
        Self::start_at(network, Instant::now())
    }

    fn start_at(network: &NetworkOptions, now: Instant) -> SpeedMeter {
        let window = network.speed_time.max(Duration::from_millis(1));
        // At most a day of bytes at any rate: no overflow, and never 0 for a limit > 0.
        let needed = if network.speed_limit == 0 {
            0
        } else {
            let exact = network.speed_limit as f64 * window.as_secs_f64();
            // A float within u64's range (clamped): the cast only drops the fraction.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let bytes = exact.ceil().min(u64::MAX as f64) as u64;
            bytes.max(1)
        };
        SpeedMeter {
            needed,
            window,
            start: now,
            seen: 0,
        }
    }

    /// Counts `bytes` that arrived now: [`TooSlow`] when a window that ended before
    /// them brought fewer bytes than the limit asks.
    pub(crate) fn record(&mut self, bytes: u64) -> Result<(), TooSlow> {
        self.record_at(bytes, Instant::now())
    }

    fn record_at(&mut self, bytes: u64, now: Instant) -> Result<(), TooSlow> {
        if self.needed == 0 {
            return Ok(());
        }
        while now >= self.start + self.window {
            if self.seen < self.needed {
                return Err(TooSlow);
            }
            self.start += self.window;
            self.seen = 0;
        }
        self.seen = self.seen.saturating_add(bytes);
        Ok(())
    }

    /// The moment by which more bytes must arrive: a wait past it ends a window with
    /// too few. `None` without a limit.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        match self.needed {
            0 => None,
            needed if self.seen >= needed => Some(self.start + self.window * 2),
            _ => Some(self.start + self.window),
        }
    }

    /// How long a wait for the next bytes may last, at most `limit`: `(wait, true)`
    /// when the low-speed limit is what bounds it.
    pub(crate) fn bound(&self, limit: Duration) -> (Duration, bool) {
        self.bound_at(limit, Instant::now())
    }

    fn bound_at(&self, limit: Duration, now: Instant) -> (Duration, bool) {
        match self.deadline() {
            Some(deadline) => {
                let left = deadline.saturating_duration_since(now);
                if left < limit {
                    (left, true)
                } else {
                    (limit, false)
                }
            }
            None => (limit, false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(limit: u64, seconds: u64) -> NetworkOptions {
        NetworkOptions {
            speed_limit: limit,
            speed_time: Duration::from_secs(seconds),
            ..NetworkOptions::default()
        }
    }

    #[test]
    fn every_window_must_bring_the_limit_times_its_length() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        // 100 bytes a second over 2 s: 200 bytes per window.
        let mut meter = SpeedMeter::start_at(&options(100, 2), t0);
        assert_eq!(meter.deadline(), Some(at(2000)));
        assert_eq!(meter.record_at(150, at(500)), Ok(()));
        assert_eq!(meter.record_at(50, at(1900)), Ok(()));
        // The window is full: the next one must start bringing bytes by its end.
        assert_eq!(meter.deadline(), Some(at(4000)));
        // 199 bytes in the second window: too few, found when the next bytes come.
        assert_eq!(meter.record_at(199, at(3000)), Ok(()));
        assert_eq!(meter.deadline(), Some(at(4000)));
        assert_eq!(meter.record_at(1000, at(4100)), Err(TooSlow));
    }

    #[test]
    fn a_crawl_of_one_byte_a_second_fails_after_one_window() {
        let t0 = Instant::now();
        let mut meter = SpeedMeter::start_at(&options(1024, 10), t0);
        let mut failed_at = None;
        for second in 1..=60u64 {
            if meter
                .record_at(1, t0 + Duration::from_secs(second))
                .is_err()
            {
                failed_at = Some(second);
                break;
            }
        }
        assert_eq!(failed_at, Some(10));
    }

    #[test]
    fn no_limit_never_fails_and_has_no_deadline() {
        let t0 = Instant::now();
        let mut meter = SpeedMeter::start_at(&options(0, 1), t0);
        assert_eq!(meter.deadline(), None);
        assert_eq!(meter.record_at(0, t0 + Duration::from_secs(3600)), Ok(()));
        assert_eq!(
            meter.bound(Duration::from_secs(5)),
            (Duration::from_secs(5), false)
        );
    }

    #[test]
    fn a_wait_is_bounded_by_the_nearer_of_its_timeout_and_the_window() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        // 1 byte a second over 2 s: the window ends at 2 s.
        let meter = SpeedMeter::start_at(&options(1, 2), t0);
        assert_eq!(
            meter.bound_at(Duration::from_secs(30), at(500)),
            (Duration::from_millis(1500), true)
        );
        assert_eq!(
            meter.bound_at(Duration::from_millis(100), at(500)),
            (Duration::from_millis(100), false)
        );
        // Past the window's end: no wait at all, by the limit.
        assert_eq!(
            meter.bound_at(Duration::from_millis(100), at(2500)),
            (Duration::ZERO, true)
        );
        // As of now (a meter started now).
        let (wait, by_speed) = SpeedMeter::start(&options(1, 2)).bound(Duration::from_secs(30));
        assert!(by_speed && wait <= Duration::from_secs(2), "{wait:?}");
    }
}
