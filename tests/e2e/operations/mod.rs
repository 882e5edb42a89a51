//! Operations: the Prometheus endpoint, operator event hooks, and logs and metrics that
//! never carry prompts, answers, tool output or keys.

mod canary;
mod hooks;
mod logs;
mod metrics;

use std::net::SocketAddr;
use std::time::Duration;

/// `GET /metrics`: the status and the text.
pub async fn scrape(addr: SocketAddr, token: Option<&str>) -> (u16, String) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut request = reqwest::Client::new().get(format!("http://{addr}/metrics"));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("the metrics endpoint answers");
    let status = response.status().as_u16();
    (status, response.text().await.expect("a body"))
}

/// The value of the sample `name` whose labels include all of `labels`.
pub fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let (series_name, series_labels) = match series.split_once('{') {
                Some((n, rest)) => (n, rest.trim_end_matches('}')),
                None => (series, ""),
            };
            if series_name != name {
                return None;
            }
            let present: Vec<(&str, &str)> = series_labels
                .split(',')
                .filter_map(|pair| {
                    let (k, v) = pair.split_once('=')?;
                    Some((k, v.trim_matches('"')))
                })
                .collect();
            labels
                .iter()
                .all(|wanted| present.contains(wanted))
                .then(|| value.parse().ok())
                .flatten()
        })
}

/// Scrapes until `ready` holds for the text (bounded: 30 s), and returns that text.
pub async fn scrape_until(
    addr: SocketAddr,
    token: Option<&str>,
    what: &str,
    ready: impl Fn(&str) -> bool,
) -> String {
    let mut text = String::new();
    for _ in 0..300 {
        text = scrape(addr, token).await.1;
        if ready(&text) {
            return text;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("metrics never showed {what}:\n{text}");
}
