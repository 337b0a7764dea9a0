//! `--partition k/n`: nextest's convention for splitting a run over a CI
//! matrix. Item `i` (0-based, in the unpartitioned order) belongs to
//! partition `i mod n + 1`, so every partition gets a near-equal share and
//! the union of the `n` partitions is exactly the whole run.

use std::fmt;
use std::str::FromStr;

/// One partition of `count`: items whose position modulo `count` is
/// `index - 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Partition {
    /// 1-based.
    pub index: u64,
    /// How many partitions.
    pub count: u64,
}

impl Partition {
    /// The whole run, as one partition.
    pub const WHOLE: Partition = Partition { index: 1, count: 1 };

    /// Whether the item at `position` (0-based) is in this partition.
    pub fn contains(&self, position: u64) -> bool {
        position % self.count == self.index - 1
    }
}

impl FromStr for Partition {
    type Err = String;

    /// `k/n` or `count:k/n` (nextest's spelling), `1 <= k <= n`.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let spec = text.strip_prefix("count:").unwrap_or(text);
        let parsed = spec
            .split_once('/')
            .and_then(|(k, n)| Some((k.parse::<u64>().ok()?, n.parse::<u64>().ok()?)));
        match parsed {
            Some((index, count)) if count >= 1 && (1..=count).contains(&index) => {
                Ok(Partition { index, count })
            }
            _ => Err(format!(
                "`{text}` is not a partition: write k/n (or count:k/n) with 1 <= k <= n"
            )),
        }
    }
}

impl fmt::Display for Partition {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_cover_every_item_exactly_once() {
        let partitions: Vec<Partition> =
            (1..=3).map(|k| format!("{k}/3").parse().unwrap()).collect();
        for position in 0..100 {
            let owners = partitions.iter().filter(|p| p.contains(position)).count();
            assert_eq!(owners, 1, "item {position}");
        }
        assert_eq!(
            "count:2/4".parse::<Partition>().unwrap(),
            Partition { index: 2, count: 4 }
        );
        for bad in ["0/3", "4/3", "1/0", "x", "1/", "hash:1/2"] {
            assert!(bad.parse::<Partition>().is_err(), "{bad}");
        }
        assert!(Partition::WHOLE.contains(7));
    }
}
