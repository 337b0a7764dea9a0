//! Scope keys and the parent chain (`dsh-scope`).
//!
//! A scope key names one agent's layer of registrations; a key may have one
//! parent (an agent preset's standing scope). Registration views inherit down
//! the chain and listener admission extends up it, both from this one
//! relation.

use std::collections::BTreeMap;
use std::fmt;
use std::rc::Rc;

use super::js::JsError;

/// An opaque scope identity. In upstream it is an object (the Agent); here a
/// name chosen by the scenario or the loop.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ScopeKey(Rc<str>);

impl ScopeKey {
    /// A key with this name.
    pub fn new(name: &str) -> Self {
        ScopeKey(Rc::from(name))
    }

    /// The key's name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ScopeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Display for ScopeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The parent relation between scope keys.
#[derive(Clone, Debug, Default)]
pub struct ScopeTree {
    parents: BTreeMap<ScopeKey, ScopeKey>,
}

impl ScopeTree {
    /// Bind `parent` as `key`'s enclosing scope, once (01 R2.3).
    pub fn bind_parent(&mut self, key: &ScopeKey, parent: &ScopeKey) -> Result<(), JsError> {
        if self.parents.contains_key(key) {
            return Err(JsError::error(
                "dsh-scope: scope key is already bound to a parent; re-linking requires the binding returned by the original bind",
            ));
        }
        let mut cursor = Some(parent.clone());
        while let Some(current) = cursor {
            if &current == key {
                return Err(JsError::error(
                    "dsh-scope: scope parent link would form a cycle",
                ));
            }
            cursor = self.parents.get(&current).cloned();
        }
        self.parents.insert(key.clone(), parent.clone());
        Ok(())
    }

    /// The chain from `key` to its root, nearest first.
    pub fn chain(&self, key: Option<&ScopeKey>) -> Vec<ScopeKey> {
        let mut chain = Vec::new();
        let mut cursor = key.cloned();
        while let Some(current) = cursor {
            cursor = self.parents.get(&current).cloned();
            chain.push(current);
        }
        chain
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binding_twice_or_in_a_cycle_fails() {
        let (x, p, r) = (ScopeKey::new("x"), ScopeKey::new("p"), ScopeKey::new("r"));
        let mut tree = ScopeTree::default();
        tree.bind_parent(&x, &p).unwrap();
        tree.bind_parent(&p, &r).unwrap();
        assert_eq!(tree.chain(Some(&x)), vec![x.clone(), p.clone(), r.clone()]);
        assert!(
            tree.bind_parent(&x, &r)
                .unwrap_err()
                .message
                .contains("already bound")
        );
        assert!(
            tree.bind_parent(&r, &x)
                .unwrap_err()
                .message
                .contains("cycle")
        );
        assert!(
            tree.bind_parent(&r, &r)
                .unwrap_err()
                .message
                .contains("cycle")
        );
    }
}
