//! How many tokens a model can take in: the model config's `context_window` when it names
//! one, else a known default for the model's name, else a conservative fallback.
//!
//! The figure bounds what the runtime sends: the sliding window over a session's history
//! is sized against it (see `runtime::memory`). Defaults are matched on the model name's
//! prefix, case-insensitively, after dropping a router's vendor prefix (`openai/gpt-4o` on
//! OpenRouter is `gpt-4o`). Where a model's total window includes its output (gpt-5), the
//! input limit is used, since that is what a request must fit.
//!
//! Local servers (Ollama, llama.cpp, vLLM, LM Studio) often run a model with a smaller
//! window than it supports; set `context_window` in the model config to what the server
//! was started with.

use serde_json::Value;

use super::ProviderError;
use crate::model::ModelSpec;

/// The model config key.
pub const CONTEXT_WINDOW_KEY: &str = "context_window";

/// The window of a model nobody has described: small enough for nearly any model served
/// today, so an unknown model is never sent more than it can read.
pub const FALLBACK_CONTEXT_WINDOW: u64 = 8_192;

/// Known windows by name prefix. The first match wins, so longer (more specific) prefixes
/// come before the shorter ones they extend.
const KNOWN_WINDOWS: &[(&str, u64)] = &[
    // OpenAI
    ("gpt-5", 272_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("chatgpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4-32k", 32_768),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("gpt-oss", 131_072),
    ("o1-mini", 128_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    // Anthropic
    ("claude-2", 100_000),
    ("claude", 200_000),
    // Google
    ("gemini-1.5-pro", 2_097_152),
    ("gemini-1.0", 32_768),
    ("gemini-pro", 32_768),
    ("gemini", 1_048_576),
    // DeepSeek
    ("deepseek", 65_536),
    // Meta Llama (`llama3.1:8b` is Ollama's spelling)
    ("llama-4", 131_072),
    ("llama-3.3", 131_072),
    ("llama-3.2", 131_072),
    ("llama-3.1", 131_072),
    ("llama3.3", 131_072),
    ("llama3.2", 131_072),
    ("llama3.1", 131_072),
    ("llama-3", 8_192),
    ("llama3", 8_192),
    // xAI
    ("grok-4", 256_000),
    ("grok", 131_072),
    // Mistral
    ("mistral-large", 131_072),
    ("mixtral", 32_768),
    // Qwen
    ("qwen", 32_768),
    // MiniMax
    ("minimax-m1", 1_000_000),
    ("minimax-text-01", 1_000_000),
];

/// The context window of `spec`, in tokens.
pub fn context_window(spec: &ModelSpec) -> u64 {
    configured(spec)
        .ok()
        .flatten()
        .unwrap_or_else(|| known_window(&spec.name).unwrap_or(FALLBACK_CONTEXT_WINDOW))
}

/// The known default for a model name, if there is one.
pub fn known_window(name: &str) -> Option<u64> {
    let name = name.trim().to_ascii_lowercase();
    let base = name.rsplit('/').next().unwrap_or(&name);
    KNOWN_WINDOWS
        .iter()
        .find(|(prefix, _)| base.starts_with(prefix))
        .map(|(_, window)| *window)
}

/// Checks the config's `context_window`: absent, null, or a positive integer.
pub fn validate(spec: &ModelSpec) -> Result<(), ProviderError> {
    configured(spec).map(drop)
}

fn configured(spec: &ModelSpec) -> Result<Option<u64>, ProviderError> {
    match spec.config_value(CONTEXT_WINDOW_KEY) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => match value.as_u64() {
            Some(window) if window > 0 => Ok(Some(window)),
            _ => Err(ProviderError::invalid_model(
                spec.to_string(),
                format!(
                    "config `{CONTEXT_WINDOW_KEY}` must be a positive integer (tokens), not {value}"
                ),
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(provider: &str, name: &str, config: Value) -> ModelSpec {
        ModelSpec {
            config: config.as_object().cloned(),
            ..ModelSpec::new(provider, name)
        }
    }

    #[test]
    fn well_known_models_have_their_windows() {
        let cases = [
            ("gpt-4.1-mini", 1_047_576),
            ("gpt-4o-2024-08-06", 128_000),
            ("gpt-4", 8_192),
            ("gpt-4-turbo-preview", 128_000),
            ("gpt-5-mini", 272_000),
            ("o1-mini", 128_000),
            ("o3-pro", 200_000),
            ("o4-mini", 200_000),
            ("claude-sonnet-4-20250514", 200_000),
            ("claude-3-5-haiku-latest", 200_000),
            ("Claude-Opus-4-1", 200_000),
            ("gemini-2.5-pro", 1_048_576),
            ("gemini-1.5-pro-002", 2_097_152),
            ("deepseek-reasoner", 65_536),
            ("llama-3.3-70b-versatile", 131_072),
            ("llama3.1:8b", 131_072),
            ("llama3:8b", 8_192),
            ("openai/gpt-4o", 128_000),
            ("meta-llama/llama-3.1-405b-instruct", 131_072),
            ("grok-4-0709", 256_000),
            ("MiniMax-M1", 1_000_000),
        ];
        for (name, window) in cases {
            assert_eq!(known_window(name), Some(window), "{name}");
            assert_eq!(context_window(&spec("openai", name, Value::Null)), window);
        }
    }

    #[test]
    fn unknown_models_get_the_conservative_fallback() {
        assert_eq!(known_window("my-finetune"), None);
        assert_eq!(
            context_window(&spec("replay", "main", Value::Null)),
            FALLBACK_CONTEXT_WINDOW
        );
    }

    #[test]
    fn the_model_config_wins_and_is_validated() {
        let configured = spec(
            "openai",
            "gpt-4o",
            serde_json::json!({ "context_window": 4096 }),
        );
        assert_eq!(context_window(&configured), 4096);
        assert!(validate(&configured).is_ok());
        assert!(
            validate(&spec(
                "openai",
                "gpt-4o",
                serde_json::json!({ "context_window": null })
            ))
            .is_ok()
        );
        for bad in [
            serde_json::json!(0),
            serde_json::json!(-5),
            serde_json::json!(1.5),
            serde_json::json!("128k"),
        ] {
            let e = validate(&spec(
                "openai",
                "gpt-4o",
                serde_json::json!({ "context_window": bad }),
            ))
            .expect_err("refused");
            assert!(
                e.to_string()
                    .contains("`context_window` must be a positive integer"),
                "{e}"
            );
        }
    }
}
