//! `assemble()`: the seven-step pipeline of spec 02, and the
//! `system-prompt/assemble` waterfall it ends with.
//!
//! The order of provider calls and the point where each error fires are
//! observable (a journal shows which providers ran before a failure), so the
//! code follows the spec's steps literally rather than computing the same
//! result in a more convenient order.

use std::cell::RefCell;
use std::rc::Rc;

use super::js::{JsError, js_normalize};
use super::registry::{LayerRef, NamedText, Registry, Text};
use super::scope::ScopeKey;
use super::tool_order::{KnownNames, order_tools};
use super::waterfall::{self, DefaultFn};
pub use crate::assembled::{
    AgentFacts, AssembleContext, AssembleEvent, AssembleListener, Assembly, AssemblyRef, Next,
    PromptEntry, ProvidedSchema, ToolProviderResult, ToolSchema, Variables,
};

fn evaluate_text(
    entry: &NamedText,
    context: &AssembleContext,
    registry: &Registry,
) -> Result<PromptEntry, JsError> {
    let text = match &entry.text {
        Text::Static(text) => Some(text.clone()),
        Text::Provider(provider) => provider(context, registry)?,
    };
    Ok(PromptEntry {
        name: entry.name.clone(),
        text,
    })
}

fn rebuild_schema(schema: &ProvidedSchema) -> Result<Rc<ToolSchema>, JsError> {
    if let Some(text) = &schema.unclonable {
        return Err(JsError::data_clone(text));
    }
    let rebuilt = schema.rebuilt.get_or_init(|| {
        Rc::new(ToolSchema {
            name: schema.name.clone(),
            description: schema.description.clone(),
            parameters: schema.parameters.as_ref().map(js_normalize),
        })
    });
    Ok(rebuilt.clone())
}

/// Stable sort by numeric order (02 A5.1): ties keep map order. Orders are
/// finite, so `a.order - b.order` has the sign of this comparison, and `-0`
/// ties with `0` as it does there.
fn sort_by_order(entries: &mut [Rc<NamedText>]) {
    entries.sort_by(|a, b| {
        a.order
            .partial_cmp(&b.order)
            .unwrap_or(std::cmp::Ordering::Equal)
    });
}

/// Materialize global named entries followed by chain shadows (01 R2.4): a
/// shadowing name keeps the position of its first occurrence. The entries
/// are shared with the registry, not copied.
fn merge(
    registry: &Registry,
    scope: Option<&ScopeKey>,
    pick: impl Fn(&super::registry::Layer) -> Vec<Rc<NamedText>>,
) -> Vec<Rc<NamedText>> {
    let global = pick(&registry.state.global.borrow());
    let layers = registry.chain_layers(scope);
    if layers.is_empty() {
        return global;
    }
    let scoped: Vec<Rc<NamedText>> = layers
        .iter()
        .flat_map(|layer| pick(&layer.borrow()))
        .collect();
    let mut merged = global;
    // A few shadows (the usual case) are found by a scan; many by an index.
    if scoped.len() <= 16 {
        for entry in scoped {
            match merged.iter().position(|known| known.name == entry.name) {
                Some(index) => merged[index] = entry,
                None => merged.push(entry),
            }
        }
        return merged;
    }
    let mut position: std::collections::BTreeMap<Rc<str>, usize> = merged
        .iter()
        .enumerate()
        .map(|(i, entry)| (entry.name.clone(), i))
        .collect();
    for entry in scoped {
        match position.get(&*entry.name) {
            Some(&index) => merged[index] = entry,
            None => {
                position.insert(entry.name.clone(), merged.len());
                merged.push(entry);
            }
        }
    }
    merged
}

fn named_entries(table: &super::table::Table<Rc<NamedText>>) -> Vec<Rc<NamedText>> {
    table.entries().map(|(_, value)| value.clone()).collect()
}

impl Registry {
    /// `assemble(context)` (02 §1).
    pub async fn assemble(&self, context: AssembleContext) -> Result<Assembly, JsError> {
        self.compact();
        let scope = context.scope.clone();
        // Step 1: scope layers and suppression, computed once.
        let scope_layers = self.chain_layers(scope.as_ref());
        let suppressed = !self.state.global.borrow().suppressors.is_empty()
            || scope_layers
                .iter()
                .any(|layer| !layer.borrow().suppressors.is_empty());
        // Step 2: variables, global then farthest → nearest, live iteration.
        let variables = self.evaluate_variables(&scope_layers, &context)?;
        // Step 3: effective named entries, before any text provider runs.
        let mut section_definitions =
            merge(self, scope.as_ref(), |layer| named_entries(&layer.sections));
        let mut context_definitions =
            merge(self, scope.as_ref(), |layer| named_entries(&layer.contexts));
        // Step 4: tool providers, membership snapshotted before any runs.
        let (collected, known_names) = self.call_tool_providers(&scope_layers, &context)?;
        // Step 5: order and evaluate.
        sort_by_order(&mut section_definitions);
        let (sections, complete_section) =
            self.evaluate_sections(&section_definitions, &context)?;
        let mut contexts = Vec::new();
        if !suppressed {
            sort_by_order(&mut context_definitions);
            for definition in &context_definitions {
                contexts.push(evaluate_text(definition, &context, self)?);
            }
        }
        let tools = order_tools(collected, self.state.tool_order.as_deref(), &known_names)?;
        let assembly = Assembly {
            sections,
            contexts,
            tools,
            variables,
            extra: Vec::new(),
        };
        // Step 6: the waterfall.
        let mut result = self.waterfall(assembly, context).await?;
        // Step 7: hard constraints.
        if let Some(complete_section) = complete_section {
            result.sections = vec![complete_section];
        }
        if suppressed {
            result.contexts = Vec::new();
        }
        Ok(result)
    }

    /// Step 2: every variable provider of the global layer, then of each
    /// scope layer from the farthest to the nearest, iterated live (a
    /// provider that registers a variable on a later layer sees it run).
    fn evaluate_variables(
        &self,
        scope_layers: &[LayerRef],
        context: &AssembleContext,
    ) -> Result<Variables, JsError> {
        let mut variables = Variables::default();
        let layers = std::iter::once(self.state.global.clone()).chain(scope_layers.iter().cloned());
        for layer in layers {
            let mut cursor = layer.borrow().variables.cursor();
            loop {
                let next = layer.borrow().variables.next(&mut cursor);
                let Some((name, provider)) = next else { break };
                let value = provider(context, self)?;
                variables.set_shared(name.unwrap_or_default(), value);
            }
        }
        Ok(variables)
    }

    /// Step 4: the tool providers of the global layer and the scope chain,
    /// membership snapshotted before any runs, each result's schemas
    /// rebuilt, and the names a configured tool order knows (04 T9).
    fn call_tool_providers(
        &self,
        scope_layers: &[LayerRef],
        context: &AssembleContext,
    ) -> Result<(Vec<Rc<ToolSchema>>, KnownNames), JsError> {
        let providers: Vec<_> = std::iter::once(&self.state.global)
            .chain(scope_layers.iter())
            .flat_map(|layer| {
                layer
                    .borrow()
                    .tool_providers
                    .entries()
                    .map(|(_, provider)| provider.clone())
                    .collect::<Vec<_>>()
            })
            .collect();
        let mut collected = Vec::new();
        let mut known_names = KnownNames::default();
        for provider in providers {
            let result =
                provider(context, self)?.ok_or_else(|| JsError::read_of_undefined("schemas"))?;
            let schemas = result
                .schemas
                .iter()
                .map(rebuild_schema)
                .collect::<Result<Vec<_>, _>>()?;
            // Known names only matter to a configured toolOrder (04 T9).
            if self.state.tool_order.is_some() {
                match &result.known_names {
                    Some(names) => names.iter().for_each(|name| known_names.insert(name)),
                    None => schemas
                        .iter()
                        .for_each(|schema| known_names.insert(&schema.name)),
                }
            }
            collected.extend(schemas);
        }
        Ok((collected, known_names))
    }

    /// Step 5 for sections: at most one complete section may be active;
    /// every section's text is evaluated in order, and the complete one is
    /// kept apart for step 7.
    fn evaluate_sections(
        &self,
        definitions: &[Rc<NamedText>],
        context: &AssembleContext,
    ) -> Result<(Vec<PromptEntry>, Option<PromptEntry>), JsError> {
        let complete: Vec<&Rc<NamedText>> = definitions.iter().filter(|s| s.complete).collect();
        if complete.len() > 1 {
            let names: Vec<String> = complete.iter().map(|s| super::js::quote(&s.name)).collect();
            return Err(JsError::error(format!(
                "multiple complete prompt sections are active: {}",
                names.join(", ")
            )));
        }
        let mut complete_section = None;
        let mut sections = Vec::with_capacity(definitions.len());
        for definition in definitions {
            let entry = evaluate_text(definition, context, self)?;
            if definition.complete {
                complete_section = Some(entry.clone());
            }
            sections.push(entry);
        }
        Ok((sections, complete_section))
    }

    /// Step 6: the `system-prompt/assemble` waterfall over the assembly;
    /// with no listener left, `next()` resolves to the original object.
    async fn waterfall(
        &self,
        assembly: Assembly,
        context: AssembleContext,
    ) -> Result<Assembly, JsError> {
        let scope = context.scope.clone();
        let assembly: AssemblyRef = Rc::new(RefCell::new(assembly));
        let original = assembly.clone();
        let default: DefaultFn<AssemblyRef> = Rc::new(move || {
            let assembly = original.clone();
            Box::pin(async move { Ok(assembly) })
        });
        let event = Rc::new(AssembleEvent {
            assembly,
            context: Rc::new(context),
        });
        let transformed =
            waterfall::dispatch(self.listeners_for(scope.as_ref()), event, default).await?;
        // `await` in JavaScript always yields: the synchronous part of an
        // assembly ends at the waterfall, which the loop's wake relies on.
        super::signal::yield_now().await;
        // Listeners are done with the object; take it rather than copy it
        // unless one kept a reference.
        Ok(Rc::try_unwrap(transformed)
            .map_or_else(|shared| shared.borrow().clone(), RefCell::into_inner))
    }
}
