//! One connection the proxy is asked for: is the name allowed, what does it resolve to,
//! may that address be reached; then the connection itself, to the address checked.
//!
//! The name is checked before it is resolved, so a refused name is never looked up (a
//! lookup alone can carry data out through DNS). The answer is reported once, as the
//! session event [`NetworkConnectionAttempted`].

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use tokio::net::TcpStream;

use super::addresses::AddressPolicy;
use super::domains::{DomainPolicy, MAX_HOST_LEN, normalize};
use crate::events::NetworkConnectionAttempted;

/// How long a name may take to resolve, and an address to accept the connection.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(10);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// At most this many resolved addresses are tried.
const MAX_ADDRESSES: usize = 8;

/// Where a request wants to go, as the sandbox wrote it.
#[derive(Clone, Debug)]
pub struct Target<'a> {
    pub host: &'a str,
    pub port: u16,
}

/// What became of one attempt: the open connection, or the status and text to answer.
pub enum Outcome {
    Connected(TcpStream),
    Refused { status: u16, message: String },
}

/// Decides and connects; `report` receives the attempt's event.
pub async fn open(
    target: Target<'_>,
    domains: &DomainPolicy,
    addresses: &AddressPolicy,
    report: impl FnOnce(NetworkConnectionAttempted),
) -> Outcome {
    let (attempt, outcome) = attempt(target, domains, addresses).await;
    report(attempt);
    outcome
}

async fn attempt(
    target: Target<'_>,
    domains: &DomainPolicy,
    addresses: &AddressPolicy,
) -> (NetworkConnectionAttempted, Outcome) {
    let port = target.port;
    let event = |host: String, address: Option<SocketAddr>, allowed: bool, reason: String| {
        NetworkConnectionAttempted {
            host,
            port: u32::from(port),
            address: address.map(|a| a.ip().to_string()).unwrap_or_default(),
            allowed,
            reason,
        }
    };
    let refused = |host: String, address, status, reason: String| {
        let message = format!("odyssey egress proxy: {reason}\n");
        (
            event(host, address, false, reason),
            Outcome::Refused { status, message },
        )
    };
    let literal = parse_ip(target.host);
    let host = match literal {
        Some(ip) => ip.to_string(),
        None => match normalize(target.host) {
            Ok(host) => host,
            Err(why) => {
                return refused(
                    bounded(target.host),
                    None,
                    400,
                    format!("the host name is not valid: {why}"),
                );
            }
        },
    };
    if port == 0 {
        return refused(host, None, 400, "port 0 cannot be connected to".into());
    }
    let rule = match domains.check(&host) {
        Ok(pattern) => pattern.to_string(),
        Err(why) => return refused(host, None, 403, why),
    };
    let resolved = match literal {
        Some(ip) => vec![SocketAddr::new(ip, port)],
        None => match resolve(&host, port).await {
            Ok(list) if !list.is_empty() => list,
            Ok(_) => return refused(host, None, 502, "the name has no address".into()),
            Err(why) => return refused(host, None, 502, why),
        },
    };
    let mut allowed = Vec::new();
    let mut first_refusal = None;
    for address in resolved {
        match addresses.check(address) {
            Ok(why) => allowed.push((address, why)),
            Err(why) => {
                first_refusal.get_or_insert((address, why));
            }
        }
    }
    if allowed.is_empty() {
        let (address, why) = first_refusal.unwrap_or_else(|| {
            (
                SocketAddr::new(IpAddr::from([0, 0, 0, 0]), port),
                "no address".into(),
            )
        });
        return refused(host, Some(address), 403, why);
    }
    let mut last_error = String::new();
    for (address, why) in &allowed {
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(address)).await {
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                let reason = format!("the name matches `{rule}` and {why}");
                return (
                    event(host, Some(*address), true, reason),
                    Outcome::Connected(stream),
                );
            }
            Ok(Err(e)) => last_error = e.to_string(),
            Err(_) => last_error = "timed out".into(),
        }
    }
    let (address, why) = &allowed[0];
    let reason =
        format!("the name matches `{rule}` and {why}, but connecting failed: {last_error}");
    let message = format!("odyssey egress proxy: cannot connect to {host}:{port}: {last_error}\n");
    (
        event(host, Some(*address), true, reason),
        Outcome::Refused {
            status: 502,
            message,
        },
    )
}

/// An IP literal, bare or in brackets (`[::1]`).
fn parse_ip(host: &str) -> Option<IpAddr> {
    let inner = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    inner.parse().ok()
}

/// Resolves once, with a deadline; the caller connects to these addresses only.
async fn resolve(host: &str, port: u16) -> Result<Vec<SocketAddr>, String> {
    match tokio::time::timeout(RESOLVE_TIMEOUT, tokio::net::lookup_host((host, port))).await {
        Ok(Ok(found)) => {
            let mut list: Vec<SocketAddr> = Vec::new();
            for address in found {
                if !list.contains(&address) {
                    list.push(address);
                }
                if list.len() == MAX_ADDRESSES {
                    break;
                }
            }
            Ok(list)
        }
        Ok(Err(e)) => Err(format!("the name did not resolve: {e}")),
        Err(_) => Err("resolving the name timed out".into()),
    }
}

/// A name the sandbox sent that is not a valid host, cut so it cannot bloat an event.
fn bounded(host: &str) -> String {
    let mut cut: String = host.chars().take(MAX_HOST_LEN).collect();
    if cut.len() < host.len() {
        cut.push('…');
    }
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::egress::domains::DomainList;

    fn policy(bundle: &[&str]) -> DomainPolicy {
        DomainPolicy {
            bundle: DomainList::parse(bundle).expect("patterns"),
            operator: DomainList::default(),
        }
    }

    async fn run(
        host: &str,
        port: u16,
        domains: &DomainPolicy,
        addresses: &AddressPolicy,
    ) -> (NetworkConnectionAttempted, Option<u16>) {
        let mut seen = None;
        let outcome = open(Target { host, port }, domains, addresses, |a| {
            seen = Some(a)
        })
        .await;
        let status = match outcome {
            Outcome::Connected(_) => None,
            Outcome::Refused { status, .. } => Some(status),
        };
        (seen.expect("reported"), status)
    }

    #[tokio::test]
    async fn a_refused_name_is_never_resolved_and_says_why() {
        let (event, status) = run(
            "does-not-exist.invalid",
            443,
            &policy(&["api.github.com"]),
            &AddressPolicy::default(),
        )
        .await;
        assert_eq!(status, Some(403));
        assert!(!event.allowed);
        assert!(event.address.is_empty(), "not resolved: {event:?}");
        assert!(event.reason.contains("bundle's network list"), "{event:?}");
    }

    #[tokio::test]
    async fn a_loopback_listener_is_reached_only_through_an_allowed_range() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let any = policy(&["*"]);
        let (event, status) = run("localhost", port, &any, &AddressPolicy::default()).await;
        assert_eq!(status, Some(403));
        assert!(
            !event.allowed && event.reason.contains("loopback"),
            "{event:?}"
        );
        let open = AddressPolicy {
            allowed: vec!["127.0.0.0/8".parse().expect("net")],
            server_listeners: Vec::new(),
        };
        let (event, status) = run("LOCALHOST.", port, &any, &open).await;
        assert_eq!(status, None, "{event:?}");
        assert!(event.allowed && event.host == "localhost", "{event:?}");
        assert_eq!(event.address, "127.0.0.1");
        let guarded = AddressPolicy {
            server_listeners: vec![SocketAddr::from(([127, 0, 0, 1], port))],
            ..open
        };
        let (event, status) = run("127.0.0.1", port, &any, &guarded).await;
        assert_eq!(status, Some(403));
        assert!(
            event.reason.contains("listener of this server"),
            "{event:?}"
        );
    }

    #[tokio::test]
    async fn hostile_host_names_are_bounded_in_the_event() {
        let long = "a".repeat(10_000);
        let (event, status) = run(&long, 80, &policy(&["*"]), &AddressPolicy::default()).await;
        assert_eq!(status, Some(400));
        assert!(
            event.host.chars().count() <= MAX_HOST_LEN + 1,
            "{}",
            event.host.len()
        );
        let (event, _) = run("a\u{0}b", 80, &policy(&["*"]), &AddressPolicy::default()).await;
        assert!(!event.allowed);
    }
}
