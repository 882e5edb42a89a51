//! Issue 11 item 3: a networked sandbox reaches the outside only through its session's
//! egress proxy, with real bubblewrap, the real helper and relay, and real `curl`.
//!
//! The "outside" here is a loopback HTTP server of the test's, which stands for a host on
//! the internet when the operator allows `127.0.0.0/8`, and for the server's own
//! listeners (the original attack) when it does not.

use std::net::SocketAddr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use odyssey_runtime::events::NetworkConnectionAttempted;
use odyssey_runtime::sandbox::egress::IpNet;
use odyssey_runtime::sandbox::{
    ConnectionReporter, DomainList, DomainPolicy, NetworkGrant, landlock_abi,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;

pub(crate) type Seen = Arc<Mutex<Vec<NetworkConnectionAttempted>>>;

/// A grant of `patterns` whose attempts are collected.
pub(crate) fn grant(patterns: &[&str]) -> (NetworkGrant, Seen) {
    let seen: Seen = Arc::default();
    let sink = seen.clone();
    let report: ConnectionReporter =
        Arc::new(move |attempt| sink.lock().expect("seen").push(attempt));
    let domains = DomainPolicy {
        bundle: DomainList::parse(patterns).expect("patterns"),
        operator: DomainList::default(),
    };
    (NetworkGrant::new(domains, report), seen)
}

fn taken(seen: &Seen) -> Vec<NetworkConnectionAttempted> {
    std::mem::take(&mut *seen.lock().expect("seen"))
}

fn loopback_range() -> Vec<IpNet> {
    vec!["127.0.0.0/8".parse().expect("range")]
}

/// A loopback HTTP server: answers `hello` to every request and records its head; a
/// request for `/hold` gets no answer and is held open until the other side closes.
struct Upstream {
    addr: SocketAddr,
    heads: Arc<Mutex<Vec<String>>>,
    holding: Arc<AtomicUsize>,
    closed: Arc<AtomicUsize>,
}

impl Upstream {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let heads: Arc<Mutex<Vec<String>>> = Arc::default();
        let holding: Arc<AtomicUsize> = Arc::default();
        let closed: Arc<AtomicUsize> = Arc::default();
        let (h, held, gone) = (heads.clone(), holding.clone(), closed.clone());
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, h.clone(), held.clone(), gone.clone()));
            }
        });
        Self {
            addr,
            heads,
            holding,
            closed,
        }
    }

    fn port(&self) -> u16 {
        self.addr.port()
    }

    fn heads(&self) -> Vec<String> {
        self.heads.lock().expect("heads").clone()
    }
}

async fn serve(
    mut stream: tokio::net::TcpStream,
    heads: Arc<Mutex<Vec<String>>>,
    holding: Arc<AtomicUsize>,
    closed: Arc<AtomicUsize>,
) {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let hold = head.starts_with("GET /hold ");
    heads.lock().expect("heads").push(head);
    if hold {
        holding.fetch_add(1, Ordering::SeqCst);
        while matches!(stream.read(&mut buf).await, Ok(n) if n > 0) {}
        closed.fetch_add(1, Ordering::SeqCst);
        return;
    }
    let _ = stream
        .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nhello\n")
        .await;
    let _ = stream.shutdown().await;
}

impl Fixture {
    async fn networked(&self, grant: &NetworkGrant, script: &str) -> ExecOutcome {
        let mut request = self.request(SandboxMode::WorkspaceWrite, script);
        request.network = Some(grant.clone());
        self.run(request).await
    }
}

/// Waits (a few seconds at most) until the proxies keep only `tasks` tasks alive.
async fn settles(sandbox: &Sandbox, proxies: usize, tasks: usize) -> (usize, usize) {
    for _ in 0..300 {
        if sandbox.egress_activity() == (proxies, tasks) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    sandbox.egress_activity()
}

/// The original attack: a networked sandbox with `network: ["*"]` and a loopback server
/// without a token. Neither directly nor through the proxy does it reach the listener,
/// and each attempt through the proxy is recorded as denied, after resolution.
#[tokio::test]
async fn a_networked_sandbox_cannot_reach_a_loopback_listener_by_default() {
    let up = Upstream::start().await;
    let fx = Fixture::new();
    let (any, seen) = grant(&["*"]);
    let port = up.port();
    for (script, refused_by) in [
        // Direct: the sandbox's own network namespace has nothing on that port.
        (
            format!("curl -sS -m 5 --noproxy '*' http://127.0.0.1:{port}/direct"),
            None,
        ),
        (format!("exec 3<>/dev/tcp/127.0.0.1/{port}"), None),
        // Through the proxy, plain and tunnelled, by address and by name.
        (
            format!("curl -sSf -m 5 http://127.0.0.1:{port}/plain"),
            Some("127.0.0.1"),
        ),
        (
            format!("curl -sSf -m 5 -p http://127.0.0.1:{port}/tunnel"),
            Some("127.0.0.1"),
        ),
        (
            format!("curl -sSf -m 5 http://localhost:{port}/by-name"),
            Some("localhost"),
        ),
    ] {
        let out = fx.networked(&any, &script).await;
        assert!(failed(&out), "{script}: {}", shows(&out));
        let events = taken(&seen);
        match refused_by {
            None => assert!(events.is_empty(), "{script}: {events:?}"),
            Some(host) => {
                let [event] = events.as_slice() else {
                    panic!("{script}: one attempt expected, got {events:?}");
                };
                assert_eq!(
                    (event.host.as_str(), event.port, event.allowed),
                    (host, u32::from(port), false),
                    "{script}"
                );
                // Refused after resolution: the address is known and is the reason.
                assert_eq!(event.address, "127.0.0.1", "{event:?}");
                assert!(event.reason.contains("loopback"), "{event:?}");
            }
        }
    }
    assert!(
        up.heads().is_empty(),
        "the listener was reached: {:?}",
        up.heads()
    );
}

#[tokio::test]
async fn allowed_hosts_are_reached_through_the_proxy_by_connect_and_plain_http() {
    let up = Upstream::start().await;
    let fx = Fixture::with(|s| s.egress.allowed_cidrs = loopback_range());
    let (localhost, seen) = grant(&["localhost"]);
    let port = up.port();

    let out = fx
        .networked(
            &localhost,
            &format!(
                "echo \"$HTTP_PROXY $HTTPS_PROXY $http_proxy $https_proxy\"; \
                 curl -sSf -m 10 -H 'Proxy-Authorization: Basic c2VjcmV0' \
                 http://localhost:{port}/plain && \
                 curl -sSf -m 10 -p http://localhost:{port}/tunnel"
            ),
        )
        .await;
    assert_eq!(out.exit_code, 0, "{}", shows(&out));
    let proxy = "http://127.0.0.1:3128";
    assert_eq!(
        out.stdout,
        format!("{proxy} {proxy} {proxy} {proxy}\nhello\nhello\n")
    );
    let heads = up.heads();
    let [plain, tunnel] = heads.as_slice() else {
        panic!("two requests expected: {heads:?}");
    };
    let plain = plain.to_ascii_lowercase();
    // Forwarded: origin-form, its own Host, no proxy credentials, one request per connection.
    assert!(plain.starts_with("get /plain http/1.1\r\n"), "{plain}");
    assert!(
        plain.contains(&format!("host: localhost:{port}\r\n")),
        "{plain}"
    );
    assert!(plain.contains("connection: close\r\n"), "{plain}");
    assert!(!plain.contains("proxy-"), "{plain}");
    // Tunnelled: the bytes curl sent, untouched.
    assert!(tunnel.starts_with("GET /tunnel HTTP/1.1\r\n"), "{tunnel}");

    let events = taken(&seen);
    assert_eq!(events.len(), 2, "{events:?}");
    for event in &events {
        assert!(event.allowed, "{event:?}");
        assert_eq!(
            (event.host.as_str(), event.port, event.address.as_str()),
            ("localhost", u32::from(port), "127.0.0.1")
        );
        assert!(
            event.reason.contains("matches `localhost`")
                && event.reason.contains("allowed range 127.0.0.0/8"),
            "{event:?}"
        );
    }

    // A host the bundle does not list is denied without being resolved.
    let out = fx
        .networked(
            &localhost,
            &format!("curl -sSf -m 5 http://127.0.0.1:{port}/"),
        )
        .await;
    assert!(failed(&out), "{}", shows(&out));
    let events = taken(&seen);
    assert!(
        matches!(events.as_slice(), [e] if !e.allowed && e.address.is_empty()
            && e.reason.contains("not in the bundle's network list")),
        "{events:?}"
    );
    assert_eq!(up.heads().len(), 2);

    // Connections ended with their processes: only the accept loop is left.
    assert_eq!(settles(&fx.sandbox, 1, 1).await, (1, 1));
}

#[tokio::test]
async fn a_star_dot_pattern_admits_subdomains_but_not_the_domain_itself() {
    let up = Upstream::start().await;
    let fx = Fixture::with(|s| s.egress.allowed_cidrs = loopback_range());
    let (subdomains, seen) = grant(&["*.localhost"]);
    let port = up.port();
    let out = fx
        .networked(
            &subdomains,
            &format!(
                "curl -sSf -m 5 http://localhost:{port}/; \
                 curl -sSf -m 5 http://api.localhost:{port}/"
            ),
        )
        .await;
    assert!(failed(&out), "{}", shows(&out));
    let events = taken(&seen);
    let [domain, subdomain] = events.as_slice() else {
        panic!("two attempts expected: {events:?}");
    };
    assert!(
        !domain.allowed && domain.reason.contains("not in the bundle's network list"),
        "{domain:?}"
    );
    // The subdomain passed the name check; it then has no address on this machine.
    assert_eq!(subdomain.host, "api.localhost");
    assert!(
        !subdomain.reason.contains("network list") && subdomain.reason.contains("resolve"),
        "{subdomain:?}"
    );
    assert!(up.heads().is_empty());
}

#[tokio::test]
async fn the_servers_listeners_are_refused_even_inside_an_allowed_range() {
    let up = Upstream::start().await;
    let listener = up.addr;
    let fx = Fixture::with(|s| {
        s.egress.allowed_cidrs = loopback_range();
        s.egress.server_listeners = vec![listener];
    });
    let (any, seen) = grant(&["*"]);
    let out = fx
        .networked(
            &any,
            &format!(
                "curl -sSf -m 5 http://localhost:{0}/; curl -sSf -m 5 -p http://127.0.0.1:{0}/",
                up.port()
            ),
        )
        .await;
    assert!(failed(&out), "{}", shows(&out));
    let events = taken(&seen);
    assert_eq!(events.len(), 2, "{events:?}");
    for event in &events {
        assert!(
            !event.allowed && event.reason.contains("listener of this server"),
            "{event:?}"
        );
    }
    assert!(up.heads().is_empty());
}

/// The relay decides nothing: a process speaking to the proxy's socket directly meets the
/// same rules. And the command itself may only open IPv4 stream sockets and connect to
/// the relay's port.
#[tokio::test]
async fn the_proxy_decides_and_the_command_reaches_only_the_relay() {
    let up = Upstream::start().await;
    let fx = Fixture::new();
    let (any, seen) = grant(&["*"]);
    let script = format!(
        r#"python3 - <<'EOF'
import errno, socket
def probe(name, make, use):
    try:
        s = make()
        use(s)
        print(name, "ok")
    except OSError as e:
        print(name, errno.errorcode.get(e.errno, e.errno))
probe("inet6", lambda: socket.socket(socket.AF_INET6), lambda s: None)
probe("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM), lambda s: None)
probe("other-port", socket.socket, lambda s: s.connect(("127.0.0.1", 8080)))
probe("bind", socket.socket, lambda s: s.bind(("127.0.0.1", 8081)))
probe("relay", socket.socket, lambda s: s.connect(("127.0.0.1", 3128)))
u = socket.socket(socket.AF_UNIX)
u.connect("/run/odyssey-egress/proxy.sock")
u.sendall(b"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: x\r\n\r\n")
print("direct", u.recv(64).split(b"\r\n")[0].decode())
EOF
touch /run/odyssey-egress/planted 2>/dev/null && echo planted || echo read-only"#,
        port = up.port()
    );
    let out = fx.networked(&any, &script).await;
    assert_eq!(out.exit_code, 0, "{}", shows(&out));
    let lines: Vec<&str> = out.stdout.lines().collect();
    // Landlock restricts TCP ports from ABI 4 on; before it, only the relay listens in
    // the sandbox's namespace anyway.
    let tcp_rules = landlock_abi() >= 4;
    assert_eq!(
        lines,
        [
            "inet6 EPERM",
            "udp EPERM",
            if tcp_rules {
                "other-port EACCES"
            } else {
                "other-port ECONNREFUSED"
            },
            if tcp_rules { "bind EACCES" } else { "bind ok" },
            "relay ok",
            "direct HTTP/1.1 403 Forbidden",
            "read-only",
        ],
        "{}",
        shows(&out)
    );
    let events = taken(&seen);
    assert!(
        matches!(events.as_slice(), [e] if !e.allowed && e.reason.contains("loopback")),
        "{events:?}"
    );
    assert!(up.heads().is_empty());
}

#[tokio::test]
async fn a_sandbox_without_network_has_no_proxy_either() {
    let fx = Fixture::new();
    let out = fx
        .sh(
            SandboxMode::WorkspaceWrite,
            "echo \"[$HTTP_PROXY]\"; ls /run/odyssey-egress 2>&1; \
             exec 3<>/dev/tcp/127.0.0.1/3128 && echo connected",
        )
        .await;
    assert!(failed(&out), "{}", shows(&out));
    assert!(out.stdout.starts_with("[]\n"), "{}", shows(&out));
    assert!(!out.stdout.contains("connected"));
    assert!(out.stdout.contains("No such file"), "{}", shows(&out));
    assert_eq!(fx.sandbox.egress_activity(), (0, 0));
    assert!(!fx.cell.root.join("egress").exists());
}

#[tokio::test]
async fn removing_the_cell_stops_its_proxy() {
    let fx = Fixture::new();
    let (any, _seen) = grant(&["*"]);
    let out = fx.networked(&any, "true").await;
    assert_eq!(out.exit_code, 0, "{}", shows(&out));
    let socket = fx.cell.root.join("egress/proxy.sock");
    assert!(socket.exists());
    assert_eq!(fx.sandbox.egress_activity(), (1, 1));
    fx.sandbox.remove_cell(&fx.cell).await.expect("remove");
    assert_eq!(fx.sandbox.egress_activity(), (0, 0));
    assert!(!fx.cell.root.exists());
}

/// Shutting down ends every tunnel at once, even while its process still runs, and
/// leaves no task and no socket behind.
#[tokio::test]
async fn shutdown_ends_open_tunnels_and_every_proxy_task() {
    let up = Upstream::start().await;
    let fx = Arc::new(Fixture::with(|s| s.egress.allowed_cidrs = loopback_range()));
    let (localhost, seen) = grant(&["localhost"]);
    let runner = {
        let fx = fx.clone();
        let script = format!("curl -sS -m 60 -p http://localhost:{}/hold", up.port());
        tokio::spawn(async move { fx.networked(&localhost, &script).await })
    };
    for _ in 0..500 {
        if up.holding.load(Ordering::SeqCst) == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        up.holding.load(Ordering::SeqCst),
        1,
        "the tunnel never opened"
    );
    let (proxies, tasks) = fx.sandbox.egress_activity();
    assert_eq!(proxies, 1);
    assert!(tasks >= 2, "accept loop and tunnel: {tasks}");

    fx.sandbox.shutdown().await;
    assert_eq!(fx.sandbox.egress_activity(), (0, 0));
    assert!(!fx.cell.root.join("egress/proxy.sock").exists());
    let out = tokio::time::timeout(Duration::from_secs(20), runner)
        .await
        .expect("curl saw its tunnel close")
        .expect("joins");
    assert!(failed(&out), "{}", shows(&out));
    for _ in 0..500 {
        if up.closed.load(Ordering::SeqCst) == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        up.closed.load(Ordering::SeqCst),
        1,
        "the upstream connection stayed open"
    );
    assert!(taken(&seen).iter().all(|e| e.allowed));
}
