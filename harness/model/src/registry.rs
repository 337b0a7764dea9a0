//! The prompt registry (`SystemPrompt`, spec 01): config, the global layer and
//! scoped layers, the five contribution APIs, disposers, change notifications
//! and `system-prompt/assemble` listeners.
//!
//! The registry is a cheap-to-clone handle over shared state, like the
//! upstream service object: providers receive it during an assembly and may
//! register or dispose entries from inside their evaluation, which is exactly
//! the behaviour the contract pins down (02 §3).

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;

use super::assembled::{AssembleContext, AssembleListener, ToolProviderResult};
use super::js::JsError;
use super::render::{VARIABLE_NAME_PATTERN, is_valid_variable_name};
use super::scope::{ScopeKey, ScopeTree};
use super::table::{EntryUid, Table};
use super::tool_order::validate_tool_order;

/// The identity section's name, order and text (01 §1).
pub const IDENTITY_SECTION: &str = "harness:identity";
/// Order of the identity section.
pub const IDENTITY_ORDER: f64 = -100.0;
/// Text of the identity section.
pub const IDENTITY_TEXT: &str = "You are an AI agent powered by DeepSeek Harness.";
/// The persona slot's name.
pub const PERSONA_SECTION: &str = "deployment:persona";
/// The persona slot's order.
pub const PERSONA_ORDER: f64 = 0.0;

/// `SystemPrompt` plugin config (01 §1).
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Register the `harness:identity` section.
    pub include_harness_identity: bool,
    /// `false` registers one global runtime-context suppressor.
    pub include_runtime_context: bool,
    /// Text of the always-registered `deployment:persona` section.
    pub persona: String,
    /// Explicit tool order; `None` sorts by name.
    pub tool_order: Option<Vec<String>>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            include_harness_identity: true,
            include_runtime_context: true,
            persona: String::new(),
            tool_order: None,
        }
    }
}

/// A text provider: called at most once per assembly. `Ok(None)` is `undefined`.
pub type TextFn = Rc<dyn Fn(&AssembleContext, &Registry) -> Result<Option<Rc<str>>, JsError>>;
/// A variable provider. `Ok(None)` is `undefined`.
pub type VariableFn = TextFn;
/// A tool provider. `Ok(None)` is `undefined` (assembly then fails reading `schemas`).
pub type ToolProviderFn =
    Rc<dyn Fn(&AssembleContext, &Registry) -> Result<Option<ToolProviderResult>, JsError>>;

/// Section or context text: a string, or a function evaluated per assembly.
#[derive(Clone)]
pub enum Text {
    /// Fixed text (shared with every assembly that selects it).
    Static(Rc<str>),
    /// Evaluated once per assembly that selects this entry.
    Provider(TextFn),
}

/// A named, ordered section or context registration.
#[derive(Clone)]
pub struct NamedText {
    /// Unique per layer.
    pub name: Rc<str>,
    /// Sort key (finite).
    pub order: f64,
    /// The text or its provider.
    pub text: Text,
    /// Section authority flag (sections only; strict `true`).
    pub complete: bool,
}

/// All registrations owned by one layer (01 R2.1).
#[derive(Default)]
pub struct Layer {
    // Shared: an assembly snapshots the entries by reference count.
    pub(crate) sections: Table<Rc<NamedText>>,
    pub(crate) contexts: Table<Rc<NamedText>>,
    pub(crate) suppressors: Table<()>,
    pub(crate) tool_providers: Table<ToolProviderFn>,
    pub(crate) variables: Table<VariableFn>,
}

impl Layer {
    fn is_empty(&self) -> bool {
        self.sections.is_empty()
            && self.contexts.is_empty()
            && self.suppressors.is_empty()
            && self.tool_providers.is_empty()
            && self.variables.is_empty()
    }

    fn compact(&mut self) {
        self.sections.compact();
        self.contexts.compact();
        self.suppressors.compact();
        self.tool_providers.compact();
        self.variables.compact();
    }
}

pub(crate) type LayerRef = Rc<RefCell<Layer>>;

/// Which table of a layer an entry lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TableKind {
    Section,
    Context,
    Suppressor,
    ToolProvider,
    Variable,
}

/// Where a `system-prompt/assemble` listener is registered from (01 R5.1).
#[derive(Clone, Debug, Default)]
pub struct ListenerOptions {
    /// The registering context's scope tag; `None` = untagged.
    pub tag: Option<ScopeKey>,
    /// `{global: true}`: bypass scope filtering.
    pub global: bool,
    /// `{prepend: true}`: insert outermost.
    pub prepend: bool,
}

pub(crate) struct ListenerRecord {
    uid: EntryUid,
    options: ListenerOptions,
    pub(crate) callback: AssembleListener,
}

pub(crate) struct RegistryState {
    pub(crate) global: LayerRef,
    pub(crate) scoped: RefCell<BTreeMap<ScopeKey, LayerRef>>,
    pub(crate) scopes: RefCell<ScopeTree>,
    pub(crate) tool_order: Option<Vec<String>>,
    pub(crate) listeners: RefCell<Vec<ListenerRecord>>,
    change_listeners: RefCell<Vec<(EntryUid, ChangeListener)>>,
    changes: Cell<u64>,
    next_uid: Cell<EntryUid>,
}

/// Handle to one `SystemPrompt` service.
#[derive(Clone)]
pub struct Registry {
    pub(crate) state: Rc<RegistryState>,
}

/// A weak handle, for closures stored inside the registry itself.
#[derive(Clone)]
pub struct WeakRegistry(std::rc::Weak<RegistryState>);

impl WeakRegistry {
    /// The registry, if it still exists.
    pub fn upgrade(&self) -> Option<Registry> {
        self.0.upgrade().map(|state| Registry { state })
    }
}

/// A `system-prompt/change` listener. It runs synchronously inside the
/// registration or disposal that changed the registry; a throw propagates.
pub type ChangeListener = Rc<dyn Fn() -> Result<(), JsError>>;

/// Undo for one registration. Idempotent: the second call does nothing.
#[derive(Clone)]
pub struct Disposer {
    registry: Registry,
    target: DisposeTarget,
    active: Rc<Cell<bool>>,
}

#[derive(Clone)]
enum DisposeTarget {
    Entry {
        layer: LayerRef,
        scope: Option<ScopeKey>,
        table: TableKind,
        uid: EntryUid,
    },
    Listener {
        uid: EntryUid,
    },
    ChangeListener {
        uid: EntryUid,
    },
}

impl Disposer {
    /// Remove the registration; emits `system-prompt/change` for registry
    /// entries (not for listeners). Returns whether anything was removed;
    /// a change listener's throw is dropped (see [`Disposer::try_dispose`]).
    pub fn dispose(&self) -> bool {
        self.try_dispose().unwrap_or(true)
    }

    /// [`Disposer::dispose`], with a change listener's throw: the entry is
    /// removed first, then the change is published (dsh-scope
    /// `ScopedLayers.effect`'s undo), so a throw leaves it removed.
    pub fn try_dispose(&self) -> Result<bool, JsError> {
        if !self.active.replace(false) {
            return Ok(false);
        }
        let state = &self.registry.state;
        match &self.target {
            DisposeTarget::Entry {
                layer,
                scope,
                table,
                uid,
            } => {
                let now_empty = {
                    let mut layer_mut = layer.borrow_mut();
                    match table {
                        TableKind::Section => layer_mut.sections.remove(*uid),
                        TableKind::Context => layer_mut.contexts.remove(*uid),
                        TableKind::Suppressor => layer_mut.suppressors.remove(*uid),
                        TableKind::ToolProvider => layer_mut.tool_providers.remove(*uid),
                        TableKind::Variable => layer_mut.variables.remove(*uid),
                    };
                    layer_mut.is_empty()
                };
                // Only reclaim the map slot if it still holds this layer.
                if let Some(scope) = scope
                    && now_empty
                {
                    let mut scoped = state.scoped.borrow_mut();
                    if scoped
                        .get(scope)
                        .is_some_and(|current| Rc::ptr_eq(current, layer))
                    {
                        scoped.remove(scope);
                    }
                }
                self.registry.emit_change()?;
            }
            DisposeTarget::Listener { uid } => {
                state
                    .listeners
                    .borrow_mut()
                    .retain(|record| record.uid != *uid);
            }
            DisposeTarget::ChangeListener { uid } => {
                state
                    .change_listeners
                    .borrow_mut()
                    .retain(|(listener_uid, _)| listener_uid != uid);
            }
        }
        Ok(true)
    }
}

fn duplicate_error(kind: &str, name: &str, scoped: bool, hint: &str) -> JsError {
    if scoped {
        JsError::error(format!(
            "prompt {kind} \"{name}\" is already registered in this scope"
        ))
    } else {
        JsError::error(format!(
            "prompt {kind} \"{name}\" is already registered (for a per-agent {hint}, register through that agent's `agent.ctx` instead)"
        ))
    }
}

impl Registry {
    /// Construct the service (01 R1.1): validate `toolOrder`, then register the
    /// identity section, the persona section and the optional suppressor.
    pub fn new(config: Config) -> Result<Registry, JsError> {
        validate_tool_order(config.tool_order.as_deref())?;
        let registry = Registry {
            state: Rc::new(RegistryState {
                global: Rc::new(RefCell::new(Layer::default())),
                scoped: RefCell::new(BTreeMap::new()),
                scopes: RefCell::new(ScopeTree::default()),
                tool_order: config.tool_order.clone(),
                listeners: RefCell::new(Vec::new()),
                change_listeners: RefCell::new(Vec::new()),
                changes: Cell::new(0),
                next_uid: Cell::new(1),
            }),
        };
        if config.include_harness_identity {
            registry.section(
                None,
                NamedText {
                    name: IDENTITY_SECTION.into(),
                    order: IDENTITY_ORDER,
                    text: Text::Static(IDENTITY_TEXT.into()),
                    complete: false,
                },
            )?;
        }
        registry.section(
            None,
            NamedText {
                name: PERSONA_SECTION.into(),
                order: PERSONA_ORDER,
                text: Text::Static(Rc::from(config.persona.as_str())),
                complete: false,
            },
        )?;
        if !config.include_runtime_context {
            registry.suppress_runtime_context(None)?;
        }
        Ok(registry)
    }

    /// A weak handle to this registry.
    pub fn downgrade(&self) -> WeakRegistry {
        WeakRegistry(Rc::downgrade(&self.state))
    }

    /// How many `system-prompt/change` events have been emitted so far.
    pub fn change_count(&self) -> u64 {
        self.state.changes.get()
    }

    /// Bind a scope's parent (`createScope(ctx, key, {parent})`).
    pub fn bind_scope_parent(&self, key: &ScopeKey, parent: &ScopeKey) -> Result<(), JsError> {
        self.state.scopes.borrow_mut().bind_parent(key, parent)
    }

    /// The chain from a scope to its root, nearest first.
    pub fn scope_chain(&self, scope: Option<&ScopeKey>) -> Vec<ScopeKey> {
        self.state.scopes.borrow().chain(scope)
    }

    fn mint_uid(&self) -> EntryUid {
        let uid = self.state.next_uid.get();
        self.state.next_uid.set(uid + 1);
        uid
    }

    /// Run one registration against the layer of `scope`, creating the layer
    /// on first use and reclaiming it if the first registration fails.
    fn register(
        &self,
        scope: Option<&ScopeKey>,
        table: TableKind,
        action: impl FnOnce(&mut Layer, EntryUid, bool) -> Result<(), JsError>,
    ) -> Result<Disposer, JsError> {
        let state = &self.state;
        let (layer, created) = match scope {
            None => (state.global.clone(), false),
            Some(scope) => {
                let mut scoped = state.scoped.borrow_mut();
                match scoped.get(scope) {
                    Some(layer) => (layer.clone(), false),
                    None => {
                        let layer: LayerRef = Rc::new(RefCell::new(Layer::default()));
                        scoped.insert(scope.clone(), layer.clone());
                        (layer, true)
                    }
                }
            }
        };
        let uid = self.mint_uid();
        let result = action(&mut layer.borrow_mut(), uid, scope.is_some());
        if let Err(error) = result {
            if let Some(scope) = scope
                && created
                && layer.borrow().is_empty()
            {
                state.scoped.borrow_mut().remove(scope);
            }
            return Err(error);
        }
        let disposer = Disposer {
            registry: self.clone(),
            target: DisposeTarget::Entry {
                layer,
                scope: scope.cloned(),
                table,
                uid,
            },
            active: Rc::new(Cell::new(true)),
        };
        // A throwing change listener fails the registration, which is then
        // undone, publishing a second change (cordis runs the effect's
        // disposer when its setup throws); a throw there wins.
        if let Err(error) = self.emit_change() {
            return Err(match disposer.try_dispose() {
                Err(second) => second,
                Ok(_) => error,
            });
        }
        Ok(disposer)
    }

    /// Publish `system-prompt/change`: count it, then run every change
    /// listener in order (snapshotted); the first throw propagates and the
    /// later listeners do not run (cordis `ctx.emit`).
    fn emit_change(&self) -> Result<(), JsError> {
        let state = &self.state;
        state.changes.set(state.changes.get() + 1);
        let listeners: Vec<ChangeListener> = state
            .change_listeners
            .borrow()
            .iter()
            .map(|(_, listener)| listener.clone())
            .collect();
        for listener in listeners {
            listener()?;
        }
        Ok(())
    }

    /// `ctx.on('system-prompt/change', listener)`.
    pub fn on_change(&self, listener: ChangeListener) -> Disposer {
        let uid = self.mint_uid();
        self.state
            .change_listeners
            .borrow_mut()
            .push((uid, listener));
        Disposer {
            registry: self.clone(),
            target: DisposeTarget::ChangeListener { uid },
            active: Rc::new(Cell::new(true)),
        }
    }

    /// The layer whose registration of section `name` an assembly for
    /// `scope` uses: the nearest scope of its chain that registers the name,
    /// else the global layer (`Some(None)`); `None` when no layer registers
    /// it (a `system-prompt/assemble` listener added it).
    pub fn section_origin(&self, scope: Option<&ScopeKey>, name: &str) -> Option<Option<ScopeKey>> {
        let scoped = self.state.scoped.borrow();
        for key in self.scope_chain(scope) {
            if scoped
                .get(&key)
                .is_some_and(|layer| layer.borrow().sections.contains(name))
            {
                return Some(Some(key));
            }
        }
        self.state
            .global
            .borrow()
            .sections
            .contains(name)
            .then_some(None)
    }

    /// `section({name, order, text, complete?})` (01 §4).
    pub fn section(
        &self,
        scope: Option<&ScopeKey>,
        section: NamedText,
    ) -> Result<Disposer, JsError> {
        if !section.order.is_finite() {
            return Err(JsError::type_error(format!(
                "prompt section \"{}\" order must be a finite number",
                section.name
            )));
        }
        self.register(scope, TableKind::Section, |layer, uid, scoped| {
            if layer.sections.contains(&section.name) {
                return Err(duplicate_error(
                    "section",
                    &section.name,
                    scoped,
                    "override",
                ));
            }
            layer
                .sections
                .push(uid, Some(section.name.clone()), Rc::new(section));
            Ok(())
        })
    }

    /// `context({name, order, text})` (01 §4).
    pub fn context(
        &self,
        scope: Option<&ScopeKey>,
        context: NamedText,
    ) -> Result<Disposer, JsError> {
        if !context.order.is_finite() {
            return Err(JsError::type_error(format!(
                "prompt context \"{}\" order must be a finite number",
                context.name
            )));
        }
        self.register(scope, TableKind::Context, |layer, uid, scoped| {
            if layer.contexts.contains(&context.name) {
                return Err(duplicate_error(
                    "context",
                    &context.name,
                    scoped,
                    "override",
                ));
            }
            let context = NamedText {
                complete: false,
                ..context
            };
            layer
                .contexts
                .push(uid, Some(context.name.clone()), Rc::new(context));
            Ok(())
        })
    }

    /// `suppressRuntimeContext()` (01 §4). Appending cannot fail, but its
    /// change listeners can: a throw there rolls the suppressor back and is
    /// the registration's error, as for every registration (16 CHANGE).
    pub fn suppress_runtime_context(&self, scope: Option<&ScopeKey>) -> Result<Disposer, JsError> {
        self.register(scope, TableKind::Suppressor, |layer, uid, _| {
            layer.suppressors.push(uid, None, ());
            Ok(())
        })
    }

    /// `tools(provider)` (01 §4). Like [`Registry::suppress_runtime_context`],
    /// it fails only when a change listener throws, and is then rolled back.
    pub fn tools(
        &self,
        scope: Option<&ScopeKey>,
        provider: ToolProviderFn,
    ) -> Result<Disposer, JsError> {
        self.register(scope, TableKind::ToolProvider, |layer, uid, _| {
            layer.tool_providers.push(uid, None, provider);
            Ok(())
        })
    }

    /// `variable(name, provider)` (01 §4).
    pub fn variable(
        &self,
        scope: Option<&ScopeKey>,
        name: &str,
        provider: VariableFn,
    ) -> Result<Disposer, JsError> {
        if !is_valid_variable_name(name) {
            return Err(JsError::error(format!(
                "invalid prompt variable name \"{name}\" (must match {VARIABLE_NAME_PATTERN})"
            )));
        }
        self.register(scope, TableKind::Variable, |layer, uid, scoped| {
            if layer.variables.contains(name) {
                return Err(duplicate_error("variable", name, scoped, "value"));
            }
            layer.variables.push(uid, Some(Rc::from(name)), provider);
            Ok(())
        })
    }

    /// `ctx.on('system-prompt/assemble', listener, options)` (01 R5). Listener
    /// registration is an event-bus effect: it emits no `system-prompt/change`.
    pub fn on_assemble(&self, options: ListenerOptions, callback: AssembleListener) -> Disposer {
        let uid = self.mint_uid();
        let prepend = options.prepend;
        let record = ListenerRecord {
            uid,
            options,
            callback,
        };
        let mut listeners = self.state.listeners.borrow_mut();
        if prepend {
            listeners.insert(0, record);
        } else {
            listeners.push(record);
        }
        Disposer {
            registry: self.clone(),
            target: DisposeTarget::Listener { uid },
            active: Rc::new(Cell::new(true)),
        }
    }

    /// Listeners admitted for a dispatch to `scope`, outermost first (01 R5.1–R5.2).
    pub(crate) fn listeners_for(&self, scope: Option<&ScopeKey>) -> Vec<AssembleListener> {
        let chain = self.scope_chain(scope);
        self.state
            .listeners
            .borrow()
            .iter()
            .filter(|record| {
                record.options.global
                    || match &record.options.tag {
                        None => true,
                        Some(tag) => chain.contains(tag),
                    }
            })
            .map(|record| record.callback.clone())
            .collect()
    }

    /// Existing layers along the chain, farthest first (01 R2.4).
    pub(crate) fn chain_layers(&self, scope: Option<&ScopeKey>) -> Vec<LayerRef> {
        let chain = self.scope_chain(scope);
        let scoped = self.state.scoped.borrow();
        chain
            .iter()
            .rev()
            .filter_map(|key| scoped.get(key).cloned())
            .collect()
    }

    /// Drop dead table slots in every layer; see [`Table::compact`].
    pub(crate) fn compact(&self) {
        self.state.global.borrow_mut().compact();
        for layer in self.state.scoped.borrow().values() {
            layer.borrow_mut().compact();
        }
    }

    /// Whether a scoped layer currently exists for `scope` (01 R2.5).
    pub fn has_layer(&self, scope: &ScopeKey) -> bool {
        self.state.scoped.borrow().contains_key(scope)
    }

    /// What the registry holds: the global layer, then every existing scoped
    /// layer in scope-key order (01 R2.1, R2.5).
    pub fn contents(&self) -> (LayerContents, Vec<(ScopeKey, LayerContents)>) {
        let global = LayerContents::of(&self.state.global.borrow());
        let scoped = self
            .state
            .scoped
            .borrow()
            .iter()
            .map(|(key, layer)| (key.clone(), LayerContents::of(&layer.borrow())))
            .collect();
        (global, scoped)
    }
}

/// One section or context registration as [`Registry::contents`] reports
/// it.
#[derive(Clone, Debug, PartialEq)]
pub struct EntryContents {
    /// Its name.
    pub name: Rc<str>,
    /// Its order.
    pub order: f64,
    /// Whether it is a complete section.
    pub complete: bool,
    /// Its text when static; `None` for a provider.
    pub static_text: Option<Rc<str>>,
}

/// What one layer holds, each table in insertion order.
#[derive(Clone, Debug, PartialEq)]
pub struct LayerContents {
    /// The sections.
    pub sections: Vec<EntryContents>,
    /// The contexts.
    pub contexts: Vec<EntryContents>,
    /// The variables' names.
    pub variables: Vec<String>,
    /// How many tool providers.
    pub tool_providers: usize,
    /// How many runtime-context suppressors.
    pub suppressors: usize,
}

impl LayerContents {
    fn of(layer: &Layer) -> LayerContents {
        let entries = |table: &Table<Rc<NamedText>>| {
            table
                .entries()
                .map(|(_, entry)| EntryContents {
                    name: entry.name.clone(),
                    order: entry.order,
                    complete: entry.complete,
                    static_text: match &entry.text {
                        Text::Static(text) => Some(text.clone()),
                        Text::Provider(_) => None,
                    },
                })
                .collect()
        };
        LayerContents {
            sections: entries(&layer.sections),
            contexts: entries(&layer.contexts),
            variables: layer
                .variables
                .entries()
                .filter_map(|(name, _)| name.map(str::to_string))
                .collect(),
            tool_providers: layer.tool_providers.entries().count(),
            suppressors: layer.suppressors.entries().count(),
        }
    }
}
