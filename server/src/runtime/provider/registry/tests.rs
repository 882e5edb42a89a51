//! Registry decisions that need no network: validation, availability, caching.

use super::*;
use crate::runtime::error::ErrorKind;

fn registry(env: &'static [(&'static str, &'static str)]) -> ProviderRegistry {
    ProviderRegistry::with_env(HashMap::new(), move |name| {
        env.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| (*v).to_owned())
    })
}

fn spec_with(config: serde_json::Value) -> ModelSpec {
    let mut spec = ModelSpec::new("openai", "gpt-test");
    spec.config = config.as_object().cloned();
    spec
}

#[test]
fn unknown_providers_and_empty_names_are_invalid() {
    let registry = registry(&[]);
    assert_eq!(
        registry.known_providers(),
        ["openai", "google", "gemini", "replay"]
    );
    let e = registry
        .validate(&ModelSpec::new("acme", "m1"))
        .expect_err("unknown provider refused");
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(
        e.to_string().contains("openai, google, gemini, replay"),
        "{e}"
    );
    let e = registry
        .validate(&ModelSpec::new("openai", " "))
        .expect_err("empty name refused");
    assert_eq!(e.reason(), "INVALID_MODEL");
}

#[test]
fn config_values_of_the_wrong_type_are_invalid() {
    let registry = registry(&[]);
    assert!(
        registry
            .validate(&spec_with(
                serde_json::json!({ "temperature": 0.5, "max_tokens": 10 })
            ))
            .is_ok()
    );
    let e = registry
        .validate(&spec_with(serde_json::json!({ "temperature": "hot" })))
        .expect_err("refused");
    assert!(e.to_string().contains("temperature"), "{e}");
    assert!(
        registry
            .validate(&spec_with(serde_json::json!({ "extra_body": [] })))
            .is_err()
    );
}

#[test]
fn availability_says_where_the_key_comes_from_without_showing_it() {
    let spec = ModelSpec::new("openai", "gpt-test");
    let root = Path::new(".");
    assert_eq!(
        registry(&[("OPENAI_API_KEY", "sk-env")]).availability(&spec, root),
        (true, "key from OPENAI_API_KEY".to_owned())
    );
    assert_eq!(
        registry(&[]).availability(&spec, root),
        (false, "missing OPENAI_API_KEY".to_owned())
    );
    let custom = ProviderSettings {
        api_key_env: Some("MY_OPENAI_KEY".into()),
        ..ProviderSettings::default()
    };
    let registry =
        ProviderRegistry::with_env(HashMap::from([("openai".to_owned(), custom)]), |_| None);
    assert_eq!(
        registry.availability(&spec, root),
        (false, "missing MY_OPENAI_KEY".to_owned())
    );
}

#[test]
fn resolving_twice_reuses_the_provider() {
    let registry = registry(&[("OPENAI_API_KEY", "sk-env")]);
    let spec = ModelSpec::new("openai", "gpt-test");
    let first = registry
        .resolve(&spec, Path::new("."))
        .map_err(|e| e.to_string());
    let second = registry
        .resolve(&spec, Path::new("."))
        .map_err(|e| e.to_string());
    match (first, second) {
        (Ok(a), Ok(b)) => assert!(Arc::ptr_eq(&a, &b)),
        other => panic!("resolve failed: {:?}", other.0.err().or(other.1.err())),
    }
}

#[test]
fn debug_output_redacts_the_key() {
    let settings = ProviderSettings {
        api_key: Some("sk-very-secret".into()),
        ..ProviderSettings::default()
    };
    let text = format!("{settings:?}");
    assert!(
        !text.contains("sk-very-secret") && text.contains("[REDACTED]"),
        "{text}"
    );
}

#[test]
fn a_malformed_operator_base_url_is_a_setup_error() {
    let settings = ProviderSettings {
        base_url: Some("not a url".into()),
        api_key: Some("sk-x".into()),
        ..ProviderSettings::default()
    };
    let registry =
        ProviderRegistry::with_env(HashMap::from([("openai".to_owned(), settings)]), |_| None);
    let e = registry
        .resolve(&ModelSpec::new("openai", "gpt-test"), Path::new("."))
        .err()
        .map(|e| e.reason());
    assert_eq!(e, Some("PROVIDER_SETUP_FAILED"));
}

#[test]
fn google_and_gemini_both_resolve_to_the_gemini_api() {
    let registry = registry(&[("GEMINI_API_KEY", "AIza-env")]);
    for name in ["google", "gemini"] {
        let spec = ModelSpec::new(name, "gemini-2.5-flash");
        assert!(registry.validate(&spec).is_ok(), "{name}");
        assert!(registry.resolve(&spec, Path::new(".")).is_ok(), "{name}");
    }
}

#[test]
fn gemini_availability_names_the_key_variables() {
    let spec = ModelSpec::new("gemini", "gemini-2.5-flash");
    let root = Path::new(".");
    assert_eq!(
        registry(&[("GEMINI_API_KEY", "a"), ("GOOGLE_API_KEY", "b")]).availability(&spec, root),
        (true, "key from GEMINI_API_KEY".to_owned())
    );
    assert_eq!(
        registry(&[("GOOGLE_API_KEY", "b")]).availability(&spec, root),
        (true, "key from GOOGLE_API_KEY".to_owned())
    );
    assert_eq!(
        registry(&[]).availability(&ModelSpec::new("google", "g"), root),
        (false, "missing GEMINI_API_KEY or GOOGLE_API_KEY".to_owned())
    );
    let e = registry(&[])
        .resolve(&spec, root)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.contains("GEMINI_API_KEY or GOOGLE_API_KEY"), "{e}");
}
