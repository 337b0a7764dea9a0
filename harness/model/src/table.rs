//! Insertion-ordered registration tables with JavaScript `Map` iteration.
//!
//! Upstream stores registrations in `Map`s and iterates them live: an entry
//! added during iteration is still visited, an entry removed before it is
//! reached is skipped, and a table drained to empty is replaced by a fresh map,
//! so an iterator left open on the old one sees nothing more. These rules are
//! observable (a variable registered by a variable provider shows up in the
//! same assembly), so the model reproduces them with generations and cursors
//! rather than Rust iterators, which could not tolerate mutation.

use std::collections::BTreeMap;
use std::rc::Rc;

/// Identity of one registration; unique across a registry's lifetime.
pub type EntryUid = u64;

#[derive(Clone, Debug)]
struct Slot<T> {
    uid: EntryUid,
    name: Option<Rc<str>>,
    value: T,
    alive: bool,
}

/// A table of registrations. Named tables reject a duplicate name; anonymous
/// tables accept equal values as independent entries.
#[derive(Clone, Debug)]
pub struct Table<T> {
    generation: u64,
    slots: Vec<Slot<T>>,
    index_by_name: BTreeMap<Rc<str>, usize>,
    live: usize,
}

impl<T> Default for Table<T> {
    fn default() -> Self {
        Table {
            generation: 0,
            slots: Vec::new(),
            index_by_name: BTreeMap::new(),
            live: 0,
        }
    }
}

/// A position in one generation of a table; see [`Table::next`].
#[derive(Clone, Copy, Debug)]
pub struct Cursor {
    generation: u64,
    position: usize,
}

impl<T: Clone> Table<T> {
    /// Whether the table has no live entries.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Whether a live entry has this name.
    pub fn contains(&self, name: &str) -> bool {
        self.index_by_name.contains_key(name)
    }

    /// Append an entry. The caller has already checked name uniqueness.
    pub fn push(&mut self, uid: EntryUid, name: Option<Rc<str>>, value: T) {
        assert!(
            name.as_ref()
                .is_none_or(|n| !self.index_by_name.contains_key(n)),
            "the registry refuses a duplicate name before pushing"
        );
        if let Some(name) = &name {
            self.index_by_name.insert(name.clone(), self.slots.len());
        }
        self.slots.push(Slot {
            uid,
            name,
            value,
            alive: true,
        });
        self.live += 1;
    }

    /// Remove the entry with this identity if it is still present. Returns
    /// whether something was removed. Draining the table starts a new
    /// generation, detaching open cursors.
    pub fn remove(&mut self, uid: EntryUid) -> bool {
        let Some(slot) = self.slots.iter_mut().find(|s| s.alive && s.uid == uid) else {
            return false;
        };
        slot.alive = false;
        if let Some(name) = &slot.name {
            self.index_by_name.remove(name);
        }
        self.live -= 1;
        debug_assert_eq!(self.live, self.slots.iter().filter(|s| s.alive).count());
        if self.live == 0 {
            self.generation += 1;
            self.slots.clear();
            self.index_by_name.clear();
        }
        true
    }

    /// A cursor at the start of the current generation.
    pub fn cursor(&self) -> Cursor {
        Cursor {
            generation: self.generation,
            position: 0,
        }
    }

    /// The next live entry at or after the cursor, advancing it. Entries
    /// appended since the cursor was made are visited; a cursor from an older
    /// generation is exhausted.
    pub fn next(&self, cursor: &mut Cursor) -> Option<(Option<Rc<str>>, T)> {
        if cursor.generation != self.generation {
            return None;
        }
        while cursor.position < self.slots.len() {
            let slot = &self.slots[cursor.position];
            cursor.position += 1;
            if slot.alive {
                return Some((slot.name.clone(), slot.value.clone()));
            }
        }
        None
    }

    /// Live entries in insertion order (a snapshot).
    pub fn entries(&self) -> impl Iterator<Item = (Option<&str>, &T)> {
        self.slots
            .iter()
            .filter(|s| s.alive)
            .map(|s| (s.name.as_deref(), &s.value))
    }

    /// Drop dead slots. Only valid while no cursor is open, which holds at the
    /// start of an assembly: cursors live only in its synchronous prefix.
    pub fn compact(&mut self) {
        if self.slots.len() == self.live {
            return;
        }
        self.slots.retain(|s| s.alive);
        self.index_by_name.clear();
        for (position, slot) in self.slots.iter().enumerate() {
            if let Some(name) = &slot.name {
                self.index_by_name.insert(name.clone(), position);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(table: &Table<u32>, cursor: &mut Cursor) -> Vec<u32> {
        std::iter::from_fn(|| table.next(cursor).map(|(_, v)| v)).collect()
    }

    #[test]
    fn cursor_sees_entries_appended_during_iteration() {
        let mut table = Table::default();
        table.push(1, Some("a".into()), 1);
        let mut cursor = table.cursor();
        assert_eq!(table.next(&mut cursor).map(|(_, v)| v), Some(1));
        table.push(2, Some("b".into()), 2);
        assert_eq!(drain(&table, &mut cursor), vec![2]);
    }

    #[test]
    fn cursor_skips_entries_removed_before_they_are_reached() {
        let mut table = Table::default();
        table.push(1, None, 1);
        table.push(2, None, 2);
        table.push(3, None, 3);
        let mut cursor = table.cursor();
        table.next(&mut cursor);
        assert!(table.remove(2));
        assert!(!table.remove(2), "removal is idempotent");
        assert_eq!(drain(&table, &mut cursor), vec![3]);
    }

    #[test]
    fn draining_starts_a_generation_that_open_cursors_do_not_see() {
        let mut table = Table::default();
        table.push(1, Some("a".into()), 1);
        let mut cursor = table.cursor();
        table.next(&mut cursor);
        table.remove(1);
        table.push(2, Some("b".into()), 2);
        assert_eq!(drain(&table, &mut cursor), Vec::<u32>::new());
        assert_eq!(drain(&table, &mut table.cursor()), vec![2]);
    }

    #[test]
    fn reinserting_a_removed_name_appends_it() {
        let mut table = Table::default();
        table.push(1, Some("a".into()), 1);
        table.push(2, Some("b".into()), 2);
        table.remove(1);
        assert!(!table.contains("a"));
        table.push(3, Some("a".into()), 3);
        table.compact();
        let names: Vec<_> = table
            .entries()
            .map(|(n, _)| n.unwrap().to_string())
            .collect();
        assert_eq!(names, ["b", "a"]);
        assert!(table.contains("a"));
    }
}
