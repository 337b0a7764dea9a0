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

    /// The positions of `range` in this partition, in order, computed
    /// rather than filtered: a partition of a huge range costs its own
    /// items, not a scan of the whole range.
    pub fn items(&self, range: std::ops::RangeInclusive<u64>) -> impl Iterator<Item = u64> {
        let (start, end) = (*range.start(), *range.end());
        let wanted = self.index - 1;
        // The first position at or after `start` whose remainder is `wanted`.
        let count_wide = u128::from(self.count);
        let offset =
            (u128::from(wanted) + count_wide - u128::from(start % self.count)) % count_wide;
        let first = u64::try_from(u128::from(start) + offset)
            .ok()
            .filter(|first| *first <= end);
        let count = self.count;
        std::iter::successors(first, move |previous| {
            previous.checked_add(count).filter(|next| *next <= end)
        })
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
        // Computed items are the filtered ones, at the ends of u64 too.
        for (index, count) in [(1, 1), (1, 3), (2, 3), (3, 3), (5, 7)] {
            let partition = Partition { index, count };
            for range in [0..=20, 4..=4, 5..=17, u64::MAX - 9..=u64::MAX] {
                let filtered: Vec<u64> = range.clone().filter(|&i| partition.contains(i)).collect();
                let computed: Vec<u64> = partition.items(range).collect();
                assert_eq!(computed, filtered, "{partition}");
            }
        }
        let last = Partition {
            index: u64::MAX,
            count: u64::MAX,
        };
        let items: Vec<u64> = last.items(0..=u64::MAX).take(3).collect();
        assert_eq!(items, [u64::MAX - 1], "one item, found without a scan");
    }
}
