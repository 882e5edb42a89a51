//! The `provider/name` spelling of a model, used by the CLI flags and handy for SDK users
//! who take a model from configuration.

use odyssey_api::v1::ModelSpec;

/// A model string that is not `provider/name`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid model `{0}`: expected PROVIDER/NAME, e.g. openai/gpt-4.1-mini")]
pub struct ModelParseError(pub String);

/// Parses `provider/name` into a [`ModelSpec`] without config. Only the first `/` splits,
/// so names that contain slashes (`openrouter/meta/llama-3`) keep them.
pub fn parse_model(text: &str) -> Result<ModelSpec, ModelParseError> {
    let (provider, name) = text
        .trim()
        .split_once('/')
        .map(|(p, n)| (p.trim(), n.trim()))
        .filter(|(p, n)| !p.is_empty() && !n.is_empty() && !p.contains(char::is_whitespace))
        .ok_or_else(|| ModelParseError(text.to_owned()))?;
    Ok(ModelSpec {
        provider: provider.to_owned(),
        name: name.to_owned(),
        config: None,
    })
}

/// `provider/name`, or `-` for an unset model.
pub fn format_model(model: Option<&ModelSpec>) -> String {
    match model {
        Some(m) if !m.provider.is_empty() || !m.name.is_empty() => {
            format!("{}/{}", m.provider, m.name)
        }
        _ => "-".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_provider_and_name() {
        let model = parse_model("openai/gpt-4.1-mini").unwrap();
        assert_eq!(
            (model.provider.as_str(), model.name.as_str()),
            ("openai", "gpt-4.1-mini")
        );
        assert_eq!(
            parse_model("openrouter/meta/llama-3").unwrap().name,
            "meta/llama-3"
        );
    }

    #[test]
    fn refuses_incomplete_models() {
        for text in ["", "openai", "openai/", "/gpt", "open ai/x"] {
            assert!(parse_model(text).is_err(), "{text:?} was accepted");
        }
    }

    #[test]
    fn formats_back() {
        let model = parse_model("replay/guide").unwrap();
        assert_eq!(format_model(Some(&model)), "replay/guide");
        assert_eq!(format_model(None), "-");
    }
}
