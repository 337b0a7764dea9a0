//! Swarm testing (Groce et al., as TigerBeetle's VOPR runs it): a seed does
//! not draw every case from one fixed distribution. Each seed first draws
//! its own odds for every optional feature of the generator (how often an
//! owner, a throwing change listener, a fault or a cancel is made), and each
//! case then leaves out a random subset of the features altogether. So one
//! seed's cases are crowded with features another seed's hardly make, and a
//! rare combination (many faults and no retries, several scope disposals and
//! no listeners) shows up in some seed instead of never.
//!
//! Both draws come from the seed alone (the odds from the seed's own stream,
//! the subset from the case's), so a case still replays alone, and the odds
//! are printed with the seed ([`Swarm::line`]).

use std::collections::BTreeMap;

use super::rng::SplitMix64;

/// One optional feature of a generator: its name and the range its odds
/// (percent per draw) are drawn from.
#[derive(Clone, Copy, Debug)]
pub struct Feature {
    /// The name, as printed.
    pub name: &'static str,
    /// The lowest odds a seed gives it, in percent.
    pub low: u64,
    /// The highest odds a seed gives it, in percent.
    pub high: u64,
}

/// A feature whose odds a seed draws from `low..=high` percent.
pub const fn feature(name: &'static str, low: u64, high: u64) -> Feature {
    Feature { name, low, high }
}

/// A seed's odds for each feature of one generator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Swarm {
    odds: BTreeMap<&'static str, u64>,
    order: Vec<&'static str>,
}

/// The percentage of cases that keep any one feature (the others leave it out).
const KEPT_PERCENT: u64 = 70;

impl Swarm {
    /// The odds seed `seed` gives `features`. `salt` separates generators, so
    /// the assembly cases and the loop sessions of one seed draw apart.
    pub fn of_seed(seed: u64, salt: u64, features: &[Feature]) -> Swarm {
        let mut rng = SplitMix64::new(seed ^ salt);
        let mut odds = BTreeMap::new();
        let mut order = Vec::new();
        for feature in features {
            assert!(feature.low <= feature.high && feature.high <= 100);
            let percent = feature.low + rng.below(feature.high - feature.low + 1);
            odds.insert(feature.name, percent);
            order.push(feature.name);
        }
        Swarm { odds, order }
    }

    /// One case's features: a subset of the seed's, each kept with 70%, at the
    /// seed's odds. Drawn from the case's stream, first.
    pub fn for_case(&self, rng: &mut SplitMix64) -> CaseSwarm {
        let odds = self
            .order
            .iter()
            .map(|name| {
                let kept = rng.percent(KEPT_PERCENT);
                (*name, if kept { self.odds[name] } else { 0 })
            })
            .collect();
        CaseSwarm { odds }
    }

    /// The odds as one line: `name N%` per feature, in the generator's order.
    pub fn line(&self) -> String {
        self.order
            .iter()
            .map(|name| format!("{name} {}%", self.odds[name]))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The features one case makes, with their odds (0 for one it leaves out).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CaseSwarm {
    odds: BTreeMap<&'static str, u64>,
}

impl CaseSwarm {
    /// Every feature at these odds, for tests and callers without a seed.
    pub fn all(features: &[Feature], percent: u64) -> CaseSwarm {
        CaseSwarm {
            odds: features.iter().map(|f| (f.name, percent)).collect(),
        }
    }

    /// This case's odds for `name`, in percent (0: left out).
    pub fn odds(&self, name: &str) -> u64 {
        *self
            .odds
            .get(name)
            .unwrap_or_else(|| panic!("no swarm feature {name:?}"))
    }

    /// Whether the case keeps `name` at all.
    pub fn has(&self, name: &str) -> bool {
        self.odds(name) > 0
    }

    /// One draw of `name`: true at the case's odds (never for a feature the
    /// case leaves out, and then no randomness is used).
    pub fn roll(&self, name: &str, rng: &mut SplitMix64) -> bool {
        let odds = self.odds(name);
        odds > 0 && rng.percent(odds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FEATURES: &[Feature] = &[feature("a", 0, 100), feature("b", 5, 10)];

    #[test]
    fn a_seed_draws_its_odds_within_each_range_and_always_the_same() {
        let swarm = Swarm::of_seed(3, 1, FEATURES);
        assert_eq!(swarm, Swarm::of_seed(3, 1, FEATURES));
        let seeds: Vec<Swarm> = (0..50).map(|s| Swarm::of_seed(s, 1, FEATURES)).collect();
        assert!(seeds.iter().all(|s| (5..=10).contains(&s.odds["b"])));
        let distinct: std::collections::BTreeSet<u64> = seeds.iter().map(|s| s.odds["a"]).collect();
        assert!(distinct.len() > 20, "{distinct:?}");
        assert!(swarm.line().starts_with("a ") && swarm.line().contains(", b "));
    }

    #[test]
    fn a_case_leaves_features_out_and_never_rolls_them() {
        let swarm = Swarm::of_seed(9, 1, &[feature("a", 100, 100), feature("b", 100, 100)]);
        let mut rng = SplitMix64::new(1);
        let cases: Vec<CaseSwarm> = (0..100).map(|_| swarm.for_case(&mut rng)).collect();
        let without_a = cases.iter().filter(|c| !c.has("a")).count();
        assert!((10..=50).contains(&without_a), "{without_a}");
        for case in &cases {
            assert_eq!(case.roll("a", &mut rng), case.has("a"));
        }
    }
}
