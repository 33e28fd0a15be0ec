//! Seeded randomness: stable mixing of the seed, one generator per purpose, the
//! organization ID and node names. Stable across Rust versions (no `std` hashers), so a seed
//! plays the same scenario on every build.

use std::collections::HashSet;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// A 64-bit mix of the seed and a stream number (splitmix64).
pub fn mix(seed: u64, stream: u64) -> u64 {
    let mut z = seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A 64-bit hash of a string (FNV-1a), to derive streams from names.
pub fn hash(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// A generator for one purpose (`stream`) of one zone.
pub fn rng(seed: u64, zone_index: usize, stream: u64) -> SmallRng {
    SmallRng::seed_from_u64(mix(mix(seed, zone_index as u64 + 1), stream))
}

/// The organization ID of the seed, e.g. `cw7f3a9c` (same in every zone: one customer).
pub fn org_id(seed: u64) -> String {
    format!("cw{:06x}", mix(seed, 0x0c9) & 0xff_ffff)
}

/// Node names in the style of physical machines (`g` + 6 hex digits for GPU nodes, `c` for
/// CPU nodes): CKS nodes are named after the machine, not the pool. Unique within a zone.
#[derive(Clone, Debug)]
pub struct NodeNamer {
    rng: SmallRng,
    used: HashSet<String>,
}

impl NodeNamer {
    pub fn new(seed: u64, zone_index: usize) -> Self {
        Self {
            rng: rng(seed, zone_index, 2),
            used: HashSet::new(),
        }
    }

    /// A name not handed out before by this namer.
    pub fn next(&mut self, gpu: bool) -> String {
        loop {
            let kind = if gpu { 'g' } else { 'c' };
            let name = format!("{kind}{:06x}", self.rng.random::<u32>() & 0xff_ffff);
            if self.used.insert(name.clone()) {
                return name;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namer_never_repeats() {
        let mut n = NodeNamer::new(1, 0);
        let names: HashSet<String> = (0..5000).map(|i| n.next(i % 2 == 0)).collect();
        assert_eq!(names.len(), 5000);
        assert!(
            names
                .iter()
                .all(|s| s.len() == 7 && (s.starts_with('g') || s.starts_with('c')))
        );
    }

    #[test]
    fn streams_differ_and_repeat() {
        let a: u64 = rng(1, 0, 1).random();
        assert_eq!(a, rng(1, 0, 1).random::<u64>());
        assert_ne!(a, rng(1, 1, 1).random::<u64>());
        assert_ne!(a, rng(1, 0, 2).random::<u64>());
        assert_ne!(hash("a"), hash("b"));
        assert_eq!(org_id(5), org_id(5));
    }
}
