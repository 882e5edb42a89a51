//! Probes against real loopback sockets: one listening, one closed.

use std::collections::HashMap;
use std::path::Path;

use super::ProviderRegistry;
use crate::model::ModelSpec;
use crate::provider::ProviderSettings;

/// A port held but never listening: connecting to it is refused, and no other test can be
/// handed it while the socket lives (a released port could be bound again at once).
fn closed_port() -> (tokio::net::TcpSocket, u16) {
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket
        .bind("127.0.0.1:0".parse().expect("address"))
        .expect("bind");
    let port = socket.local_addr().expect("addr").port();
    (socket, port)
}

fn registry(urls: &[(&str, String)], keys: &[(&str, &str)]) -> ProviderRegistry {
    let settings = urls
        .iter()
        .map(|(name, url)| {
            let key = keys
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, k)| (*k).to_owned());
            let settings = ProviderSettings {
                base_url: Some(url.clone()),
                api_key: key,
                ..ProviderSettings::default()
            };
            ((*name).to_owned(), settings)
        })
        .collect::<HashMap<_, _>>();
    ProviderRegistry::with_env(settings, |_| None)
}

#[tokio::test]
async fn a_local_server_is_reported_up_or_down_by_a_real_connect() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let up = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let (_held, port) = closed_port();
    let down = format!("http://127.0.0.1:{port}/v1");
    let registry = registry(&[("ollama", up.clone()), ("llama_cpp", down.clone())], &[]);
    let root = Path::new("/nonexistent");

    let (ok, detail) = registry
        .check_availability(&ModelSpec::new("ollama", "qwen3"), root)
        .await;
    assert!(ok, "{detail}");
    assert!(
        detail.contains(&up) && detail.ends_with("reachable"),
        "{detail}"
    );

    let (ok, detail) = registry
        .check_availability(&ModelSpec::new("llama_cpp", "local"), root)
        .await;
    assert!(!ok, "{detail}");
    assert!(detail.contains(&down), "{detail}");
    assert!(detail.contains("not reachable"), "{detail}");
    assert!(detail.contains("`llama_cpp`"), "{detail}");
}

#[tokio::test]
async fn a_keyed_provider_on_loopback_is_probed_and_a_hosted_one_is_not() {
    let (_held, port) = closed_port();
    let down = format!("http://localhost:{port}/v1");
    let registry = registry(
        &[("openai", down.clone())],
        &[("openai", "sk-x"), ("groq", "g")],
    );
    let root = Path::new("/nonexistent");
    let (ok, detail) = registry
        .check_availability(&ModelSpec::new("openai", "gpt-test"), root)
        .await;
    assert!(!ok, "{detail}");
    assert!(detail.contains(&down), "{detail}");

    // groq keeps its public endpoint: its key is all that is checked, with no network.
    let settings = HashMap::from([(
        "groq".to_owned(),
        ProviderSettings {
            api_key: Some("gsk-x".into()),
            ..ProviderSettings::default()
        },
    )]);
    let hosted = ProviderRegistry::with_env(settings, |_| None);
    let (ok, detail) = hosted
        .check_availability(&ModelSpec::new("groq", "llama"), root)
        .await;
    assert!(ok, "{detail}");
    assert!(!detail.contains("reachable"), "{detail}");
}
