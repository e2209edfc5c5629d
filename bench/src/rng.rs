//! A xorshift generator for the benchmarks' jitter: random gaps between sends and random
//! phases for pollers, so a poll loop's phase relative to the messages is uniformly
//! distributed. Not for anything that needs real randomness; it only has to differ per run,
//! and `swarm-bench store` and `swarm-bench runtime latency` share it so both jitter the same way.

use std::sync::atomic::{AtomicU64, Ordering};

use swarm::fsio;

/// The generator's state; atomic so a shared `&Bench` can draw from it.
pub(crate) struct Jitter(AtomicU64);

impl Jitter {
    /// Seeded from the clock and the process id (never zero, which xorshift cannot leave).
    pub(crate) fn seeded() -> Jitter {
        Jitter(AtomicU64::new(
            fsio::now_ms() ^ (u64::from(std::process::id()) << 32) | 1,
        ))
    }

    /// A uniform pseudo-random number in `lo..hi` (`lo` when the range is empty).
    pub(crate) fn between(&self, lo: u64, hi: u64) -> u64 {
        let mut x = self.0.load(Ordering::Relaxed);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0.store(x, Ordering::Relaxed);
        lo + x % hi.saturating_sub(lo).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_stay_in_range() {
        let jitter = Jitter::seeded();
        for _ in 0..1000 {
            assert!((10..40).contains(&jitter.between(10, 40)));
            assert_eq!(jitter.between(5, 6), 5);
        }
    }
}
