//! Model providers a program embedding the runtime registers under names of its own
//! (`OdysseyRuntime::builder(config).provider("mine", Arc::new(..))`), so bundles can say
//! `provider: mine` exactly as they say `provider: openai`.
//!
//! A custom provider owns its keys, endpoints and model config: the registry validates
//! nothing of a spec naming it beyond the model name and the config's shape (no
//! credential in it: it is recorded with every turn), and never reads its config.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::super::ModelProvider;
use super::super::error::ProviderError;
use super::ProviderRegistry;

/// The longest provider name: enough for any real name, short enough for every message.
const MAX_NAME_CHARS: usize = 64;

/// Registered providers by name.
#[derive(Default)]
pub(super) struct CustomProviders {
    by_name: BTreeMap<String, Arc<dyn ModelProvider>>,
}

impl CustomProviders {
    pub fn get(&self, name: &str) -> Option<&Arc<dyn ModelProvider>> {
        self.by_name.get(name)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.by_name.keys().map(String::as_str)
    }
}

impl ProviderRegistry {
    /// Serves model specs whose provider is `name` with `provider`. The name must be new:
    /// a built-in provider cannot be replaced (its operator settings would silently stop
    /// applying), and it must be a plain lowercase identifier (`[a-z0-9_-]`), as bundles
    /// and `provider/model` arguments spell it.
    pub fn register(
        &mut self,
        name: &str,
        provider: Arc<dyn ModelProvider>,
    ) -> Result<(), ProviderError> {
        let refuse = |message: String| ProviderError::Registration {
            name: name.to_owned(),
            message,
        };
        let well_formed = name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
        if name.is_empty() || name.chars().count() > MAX_NAME_CHARS || !well_formed {
            return Err(refuse(format!(
                "a provider name is 1 to {MAX_NAME_CHARS} characters of a-z, 0-9, `_` and `-`"
            )));
        }
        if self.custom.get(name).is_some() {
            return Err(refuse(
                "a provider is already registered under this name".into(),
            ));
        }
        if self.known_providers().iter().any(|known| known == name) {
            return Err(refuse(
                "this is a built-in provider's name; register yours under another one".into(),
            ));
        }
        self.custom.by_name.insert(name.to_owned(), provider);
        Ok(())
    }
}
