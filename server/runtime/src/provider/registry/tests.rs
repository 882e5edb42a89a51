//! Registry decisions that need no network: validation, availability, caching.

use super::*;
use crate::error::ErrorKind;
use crate::provider::CredentialSettings;
use crate::requirements::Requirements;

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
        [
            "openai",
            "azure_openai",
            "deepseek",
            "groq",
            "openrouter",
            "xai",
            "minimax",
            "phind",
            "llama_cpp",
            "ollama",
            "vllm",
            "lmstudio",
            "anthropic",
            "google",
            "gemini",
            "replay"
        ]
    );
    let e = registry
        .validate(&ModelSpec::new("acme", "m1"))
        .expect_err("unknown provider refused");
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    for name in [
        "openai",
        "deepseek",
        "azure_openai",
        "ollama",
        "anthropic",
        "google",
        "gemini",
        "replay",
    ] {
        assert!(e.to_string().contains(name), "{e}");
    }
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
fn availability_names_each_providers_key_variable() {
    let root = Path::new(".");
    for (provider, var) in [
        ("deepseek", "DEEPSEEK_API_KEY"),
        ("groq", "GROQ_API_KEY"),
        ("openrouter", "OPENROUTER_API_KEY"),
        ("xai", "XAI_API_KEY"),
        ("minimax", "MINIMAX_API_KEY"),
        ("anthropic", "ANTHROPIC_API_KEY"),
    ] {
        let spec = ModelSpec::new(provider, "m");
        assert_eq!(
            registry(&[]).availability(&spec, root),
            (false, format!("missing {var}"))
        );
    }
    let with_key = registry(&[("DEEPSEEK_API_KEY", "sk-d")]);
    assert_eq!(
        with_key.availability(&ModelSpec::new("deepseek", "deepseek-chat"), root),
        (true, "key from DEEPSEEK_API_KEY".to_owned())
    );
}

#[test]
fn local_servers_need_no_key_and_say_where_they_call() {
    let root = Path::new(".");
    for (provider, url) in [
        ("llama_cpp", "http://127.0.0.1:8080/v1"),
        ("ollama", "http://127.0.0.1:11434/v1"),
        ("vllm", "http://127.0.0.1:8000/v1"),
        ("lmstudio", "http://127.0.0.1:1234/v1"),
    ] {
        let spec = ModelSpec::new(provider, "m");
        assert_eq!(
            registry(&[]).availability(&spec, root),
            (true, format!("no key needed; calls {url}"))
        );
        assert!(registry(&[]).resolve(&spec, root).is_ok());
    }
}

#[test]
fn providers_without_a_public_endpoint_need_a_base_url() {
    let root = Path::new(".");
    let azure = ModelSpec::new("azure_openai", "my-deployment");
    let keyed = registry(&[("AZURE_OPENAI_API_KEY", "k")]);
    let (ok, message) = keyed.availability(&azure, root);
    assert!(
        !ok && message.contains("AZURE_OPENAI_ENDPOINT"),
        "{message}"
    );
    let e = keyed.resolve(&azure, root).err().map(|e| e.kind());
    assert_eq!(e, Some(ErrorKind::FailedPrecondition));
    let full = registry(&[
        ("AZURE_OPENAI_API_KEY", "k"),
        ("AZURE_OPENAI_ENDPOINT", "https://res.openai.azure.com"),
    ]);
    assert_eq!(
        full.availability(&azure, root),
        (true, "key from AZURE_OPENAI_API_KEY".to_owned())
    );
    let phind = registry(&[("PHIND_API_KEY", "k")]);
    let (ok, message) = phind.availability(&ModelSpec::new("phind", "m"), root);
    assert!(!ok && message.contains("base_url"), "{message}");
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

fn openai_with(settings: ProviderSettings) -> ProviderRegistry {
    ProviderRegistry::with_env(HashMap::from([("openai".to_owned(), settings)]), |name| {
        (name == "OPENAI_API_KEY").then(|| "sk-env".to_owned())
    })
}

fn refusal(registry: &ProviderRegistry, spec: &ModelSpec) -> ProviderError {
    match registry.resolve(spec, Path::new(".")) {
        Ok(_) => panic!("{spec} resolved"),
        Err(e) => e,
    }
}

#[test]
fn a_model_base_url_for_a_server_held_key_needs_the_operators_allowlist() {
    let spec = spec_with(serde_json::json!({ "base_url": "https://proxy.example.com/v1" }));
    let e = refusal(&openai_with(ProviderSettings::default()), &spec);
    assert_eq!(e.kind(), ErrorKind::PermissionDenied);
    assert_eq!(e.reason(), "BASE_URL_NOT_ALLOWED");
    let text = e.to_string();
    assert!(
        text.contains("providers.openai.allowed_base_urls")
            && text.contains("https://proxy.example.com/v1"),
        "{text}"
    );

    let allowed = openai_with(ProviderSettings {
        allowed_base_urls: vec!["https://proxy.example.com/*".parse().unwrap()],
        ..ProviderSettings::default()
    });
    let chosen = allowed.resolve(&spec, Path::new(".")).ok().unwrap();
    let again = allowed.resolve(&spec, Path::new(".")).ok().unwrap();
    let default = allowed
        .resolve(&ModelSpec::new("openai", "gpt-test"), Path::new("."))
        .ok()
        .unwrap();
    assert!(Arc::ptr_eq(&chosen, &again), "one provider per URL");
    assert!(
        !Arc::ptr_eq(&chosen, &default),
        "the chosen URL has its own"
    );
    let elsewhere = spec_with(serde_json::json!({ "base_url": "https://proxy.example.org/v1" }));
    assert_eq!(
        refusal(&allowed, &elsewhere).reason(),
        "BASE_URL_NOT_ALLOWED"
    );
}

#[test]
fn keyless_local_providers_take_any_loopback_base_url() {
    let registry = registry(&[]);
    let local = |url: &str| {
        let mut spec = ModelSpec::new("ollama", "llama3");
        spec.config = serde_json::json!({ "base_url": url }).as_object().cloned();
        spec
    };
    assert!(
        registry
            .validate(&local("http://127.0.0.1:9999/v1"))
            .is_ok()
    );
    assert!(
        registry
            .validate(&local("http://localhost:11435/v1"))
            .is_ok()
    );
    assert_eq!(
        registry.availability(&local("http://[::1]:8081/v1"), Path::new(".")),
        (true, "no key needed; calls http://[::1]:8081/v1".to_owned())
    );
    let e = refusal(&registry, &local("http://10.1.2.3:11434/v1"));
    assert_eq!(e.kind(), ErrorKind::PermissionDenied);
    assert!(
        e.to_string().contains("providers.ollama.allowed_base_urls"),
        "{e}"
    );
    // Once the operator gives the local server a key, the key is protected like any other.
    let keyed = ProviderRegistry::with_env(
        HashMap::from([(
            "ollama".to_owned(),
            ProviderSettings {
                api_key: Some("local-secret".into()),
                ..ProviderSettings::default()
            },
        )]),
        |_| None,
    );
    assert_eq!(
        refusal(&keyed, &local("http://127.0.0.1:9999/v1")).reason(),
        "BASE_URL_NOT_ALLOWED"
    );
}

#[test]
fn a_base_url_that_is_not_a_url_string_is_an_invalid_model() {
    for bad in [serde_json::json!(42), serde_json::json!("not a url")] {
        let e = registry(&[("OPENAI_API_KEY", "k")])
            .validate(&spec_with(serde_json::json!({ "base_url": bad })))
            .expect_err("refused");
        assert_eq!(e.reason(), "INVALID_MODEL", "{e}");
    }
}

#[test]
fn requirements_cap_providers_and_every_url_a_call_may_reach() {
    let requirements = Requirements {
        allowed_providers: Some(vec!["openai".into(), "replay".into()]),
        allowed_base_urls: Some(vec!["https://proxy.example.com/*".parse().unwrap()]),
        ..Requirements::default()
    };
    let registry = openai_with(ProviderSettings {
        allowed_base_urls: vec!["https://elsewhere.example.com/*".parse().unwrap()],
        ..ProviderSettings::default()
    })
    .with_requirements(requirements.clone());
    let e = registry
        .validate(&ModelSpec::new("anthropic", "claude"))
        .expect_err("provider refused");
    assert_eq!(e.kind(), ErrorKind::PermissionDenied);
    assert!(
        e.to_string().contains("requirements.allowed_providers")
            && e.to_string().contains("replay"),
        "{e}"
    );
    // openai's public endpoint is outside the requirements.
    let e = registry
        .validate(&ModelSpec::new("openai", "gpt-test"))
        .expect_err("default endpoint refused");
    assert!(
        e.to_string().contains("requirements.allowed_base_urls"),
        "{e}"
    );
    // The provider allows this URL, the requirements do not: the requirements win.
    let e = registry
        .validate(&spec_with(
            serde_json::json!({ "base_url": "https://elsewhere.example.com/v1" }),
        ))
        .expect_err("outside the requirements");
    assert!(
        e.to_string().contains("requirements.allowed_base_urls"),
        "{e}"
    );
    // Pointing the provider inside the requirements makes it usable.
    let inside = openai_with(ProviderSettings {
        base_url: Some("https://proxy.example.com/openai/v1".into()),
        ..ProviderSettings::default()
    })
    .with_requirements(requirements);
    assert!(
        inside
            .validate(&ModelSpec::new("openai", "gpt-test"))
            .is_ok()
    );
    let (ok, detail) = inside.availability(&ModelSpec::new("anthropic", "c"), Path::new("."));
    assert!(!ok && detail.contains("not allowed"), "{detail}");
}

#[test]
fn client_chosen_urls_cannot_grow_the_provider_cache_without_bound() {
    let registry = openai_with(ProviderSettings {
        allowed_base_urls: vec!["https://proxy.example.com/*".parse().unwrap()],
        ..ProviderSettings::default()
    });
    let at = |path: usize| {
        spec_with(serde_json::json!({ "base_url": format!("https://proxy.example.com/{path}") }))
    };
    let root = Path::new(".");
    for path in 0..MAX_CACHED_URLS + 4 {
        assert!(registry.resolve(&at(path), root).is_ok());
    }
    let late = MAX_CACHED_URLS + 2;
    let (a, b) = (
        registry.resolve(&at(late), root),
        registry.resolve(&at(late), root),
    );
    assert!(
        !Arc::ptr_eq(&a.ok().unwrap(), &b.ok().unwrap()),
        "past the bound, built per turn"
    );
    let (a, b) = (
        registry.resolve(&at(0), root),
        registry.resolve(&at(0), root),
    );
    assert!(
        Arc::ptr_eq(&a.ok().unwrap(), &b.ok().unwrap()),
        "early ones stay cached"
    );
    // The operator's own URL is always kept, however full the cache is.
    let own = ModelSpec::new("openai", "gpt-test");
    let (a, b) = (registry.resolve(&own, root), registry.resolve(&own, root));
    assert!(Arc::ptr_eq(&a.ok().unwrap(), &b.ok().unwrap()));
}

/// Issue 21: a model config never carries a credential, at any depth, as a header value or
/// inside a URL; the refusal names the field and where keys go, never the value.
#[test]
fn credentials_in_a_model_config_are_refused_naming_the_field() {
    let registry = registry(&[("OPENAI_API_KEY", "sk-env")]);
    for (config, field) in [
        (serde_json::json!({ "api_key": "sk-canary-1" }), "api_key"),
        (serde_json::json!({ "ApiKey": "sk-canary-1" }), "ApiKey"),
        (
            serde_json::json!({ "extra_body": { "nested": { "password": "sk-canary-1" } } }),
            "extra_body.nested.password",
        ),
        (
            serde_json::json!({ "headers": { "X-Route": "sk-canary-1" } }),
            "headers.X-Route",
        ),
        (
            serde_json::json!({ "base_url": "https://me:sk-canary-1@proxy.example.com/v1" }),
            "base_url",
        ),
        (
            serde_json::json!({ "base_url": "https://proxy.example.com/v1?key=sk-canary-1" }),
            "base_url",
        ),
    ] {
        let e = registry
            .validate(&spec_with(config.clone()))
            .expect_err("refused");
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{config}");
        assert_eq!(e.reason(), "SECRET_IN_MODEL_CONFIG");
        let text = e.to_string();
        assert!(text.contains(&format!("config `{field}`")), "{text}");
        assert!(text.contains("config.credential"), "{text}");
        assert!(!text.contains("sk-canary-1"), "{text}");
    }
}

fn credential(provider: &str, key: &str, urls: &[&str]) -> CredentialSettings {
    CredentialSettings {
        provider: provider.into(),
        api_key: Some(key.into()),
        allowed_base_urls: urls.iter().map(|u| u.parse().unwrap()).collect(),
        ..CredentialSettings::default()
    }
}

/// Issue 21: a request picks an operator credential by name, only for its provider and
/// the base URLs it allows.
#[test]
fn a_named_credential_is_used_only_for_its_provider_and_urls() {
    let registry =
        ProviderRegistry::with_env(HashMap::new(), |_| None).with_credentials(HashMap::from([
            ("team".to_owned(), credential("openai", "sk-team", &[])),
            (
                "proxy".to_owned(),
                credential("openai", "sk-proxy", &["https://proxy.example.com/*"]),
            ),
            ("claude".to_owned(), credential("anthropic", "sk-ant", &[])),
        ]));
    let root = Path::new(".");
    let team = spec_with(serde_json::json!({ "credential": "team" }));
    // No OPENAI_API_KEY on this server: the credential is the key.
    registry
        .check_usable(&team)
        .expect("usable with the credential");
    assert!(registry.resolve(&team, root).is_ok());
    assert_eq!(
        registry.availability(&team, root),
        (true, "key from credential team".to_owned())
    );

    let cases = [
        (
            serde_json::json!({ "credential": "nope" }),
            "UNKNOWN_CREDENTIAL",
            ErrorKind::InvalidArgument,
            "defines no credential `nope`",
        ),
        (
            serde_json::json!({ "credential": 7 }),
            "INVALID_MODEL",
            ErrorKind::InvalidArgument,
            "must be a string",
        ),
        (
            serde_json::json!({ "credential": "claude" }),
            "CREDENTIAL_NOT_ALLOWED",
            ErrorKind::PermissionDenied,
            "is for provider `anthropic`, not `openai`",
        ),
        (
            serde_json::json!({ "credential": "team", "base_url": "https://proxy.example.com/v1" }),
            "BASE_URL_NOT_ALLOWED",
            ErrorKind::PermissionDenied,
            "credential `team` may only be sent to the provider's own base URL",
        ),
        // The proxy credential is not for OpenAI's own endpoint.
        (
            serde_json::json!({ "credential": "proxy" }),
            "BASE_URL_NOT_ALLOWED",
            ErrorKind::PermissionDenied,
            "credentials.proxy.allowed_base_urls",
        ),
        (
            serde_json::json!({ "credential": "proxy", "base_url": "https://evil.example.com/v1" }),
            "BASE_URL_NOT_ALLOWED",
            ErrorKind::PermissionDenied,
            "credential `proxy` is not allowed for this URL",
        ),
    ];
    for (config, reason, kind, words) in cases {
        let e = registry
            .validate(&spec_with(config.clone()))
            .expect_err("refused");
        assert_eq!((e.reason(), e.kind()), (reason, kind), "{config}: {e}");
        assert!(e.to_string().contains(words), "{config}: {e}");
    }
    let through_proxy = spec_with(
        serde_json::json!({ "credential": "proxy", "base_url": "https://proxy.example.com/v1" }),
    );
    assert!(registry.resolve(&through_proxy, root).is_ok());
    let replay = ModelSpec {
        config: serde_json::json!({ "credential": "team" })
            .as_object()
            .cloned(),
        ..ModelSpec::new("replay", "x")
    };
    assert_eq!(
        registry.validate(&replay).map_err(|e| e.reason()),
        Err("CREDENTIAL_NOT_ALLOWED")
    );
}

/// Issue 12 item 3: a session on a provider whose key is missing is refused when it is
/// created, FAILED_PRECONDITION naming the variable; and the refusal of a base URL says
/// what is true about the key.
#[test]
fn a_missing_key_is_found_before_the_first_turn_and_messages_say_what_is_true() {
    let spec = ModelSpec::new("anthropic", "claude");
    let e = registry(&[]).check_usable(&spec).expect_err("no key");
    assert_eq!(e.kind(), ErrorKind::FailedPrecondition);
    assert_eq!(e.reason(), "PROVIDER_NOT_CONFIGURED");
    assert!(e.to_string().contains("ANTHROPIC_API_KEY"), "{e}");
    assert!(
        registry(&[("ANTHROPIC_API_KEY", "sk-a")])
            .check_usable(&spec)
            .is_ok()
    );
    assert!(
        registry(&[])
            .check_usable(&ModelSpec::new("ollama", "m"))
            .is_ok()
    );
    let azure = registry(&[("AZURE_OPENAI_API_KEY", "k")])
        .check_usable(&ModelSpec::new("azure_openai", "d"))
        .expect_err("no endpoint");
    assert_eq!(azure.reason(), "PROVIDER_NOT_CONFIGURED");

    let chosen = spec_with(serde_json::json!({ "base_url": "https://proxy.example.com/v1" }));
    let without_key = registry(&[])
        .validate(&chosen)
        .expect_err("not allowed")
        .to_string();
    assert!(
        without_key.contains("the operator has not allowed this URL")
            && !without_key.contains("holds this provider's key"),
        "{without_key}"
    );
    let with_key = registry(&[("OPENAI_API_KEY", "sk-env")])
        .validate(&chosen)
        .expect_err("not allowed")
        .to_string();
    assert!(with_key.contains("holds this provider's key"), "{with_key}");
}

/// Issue 12 item 4: the URL the operator points a provider at (`--provider-base-url`) is
/// allowed by definition in a model config: the server's key goes there already.
#[test]
fn a_model_may_name_the_url_its_provider_already_calls() {
    let registry = openai_with(ProviderSettings {
        base_url: Some("https://proxy.example.com/v1".into()),
        ..ProviderSettings::default()
    });
    for url in [
        "https://proxy.example.com/v1",
        "https://proxy.example.com/v1/",
    ] {
        let spec = spec_with(serde_json::json!({ "base_url": url }));
        assert!(
            registry.resolve(&spec, Path::new(".")).is_ok(),
            "{url} refused"
        );
    }
    // Only that URL: not a path below it, not another host.
    for url in [
        "https://proxy.example.com/v1/other",
        "https://api.openai.com/v2",
    ] {
        let spec = spec_with(serde_json::json!({ "base_url": url }));
        let e = refusal(&registry, &spec);
        assert_eq!(e.reason(), "BASE_URL_NOT_ALLOWED", "{url}: {e}");
    }
}
