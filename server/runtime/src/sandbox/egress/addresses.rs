//! Which resolved addresses the proxy may connect to.
//!
//! A name the domain lists admit can still resolve to the machine itself, to the local
//! network or to a cloud metadata service. So every address is checked after resolution
//! (the proxy then connects to that very address: no second lookup can rebind the name):
//! loopback, private, link-local and the other special-purpose ranges are refused unless
//! the operator allows a range (`sandbox.network_cidrs`), and the server's own listeners
//! are refused always, allowed range or not.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use ipnet::{IpNet, Ipv4Net, Ipv6Net};

/// The operator's address rules: the special ranges it opens, and the listeners of the
/// server that no sandbox may reach.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AddressPolicy {
    pub allowed: Vec<IpNet>,
    pub server_listeners: Vec<SocketAddr>,
}

impl AddressPolicy {
    /// `Ok` with why `addr` may be reached, or `Err` with why not.
    pub fn check(&self, addr: SocketAddr) -> Result<String, String> {
        let ip = canonical(addr.ip());
        let port = addr.port();
        if self.is_server_listener(ip, port) {
            return Err(format!(
                "{} is a listener of this server",
                SocketAddr::new(ip, port)
            ));
        }
        let Some(kind) = special_range(ip) else {
            return Ok(format!("{ip} is a public address"));
        };
        match self.allowed.iter().find(|net| net.contains(&ip)) {
            Some(net) => Ok(format!("{ip} is in the allowed range {net}")),
            None => Err(format!(
                "{ip} is a {kind} address (allow a range with sandbox.network_cidrs)"
            )),
        }
    }

    /// Whether `ip:port` reaches one of the server's listeners: the same address, or any
    /// address of this machine when the listener is bound to `0.0.0.0` or `::`.
    fn is_server_listener(&self, ip: IpAddr, port: u16) -> bool {
        let mut local: Option<Vec<IpAddr>> = None;
        self.server_listeners.iter().any(|listener| {
            if listener.port() != port {
                return false;
            }
            let bound = canonical(listener.ip());
            if !bound.is_unspecified() {
                return bound == ip;
            }
            ip.is_loopback()
                || ip.is_unspecified()
                || local.get_or_insert_with(local_addresses).contains(&ip)
        })
    }
}

/// The address a connection really goes to: IPv4-mapped IPv6 (`::ffff:127.0.0.1`) is the
/// IPv4 address it carries.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        },
        v4 => v4,
    }
}

/// The kind of special-purpose range `ip` (canonical) lies in, `None` for a public one.
pub fn special_range(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => special_v4(v4),
        IpAddr::V6(v6) => special_v6(v6),
    }
}

fn special_v4(ip: Ipv4Addr) -> Option<&'static str> {
    const RANGES: &[(Ipv4Addr, u8, &str)] = &[
        (Ipv4Addr::UNSPECIFIED, 32, "unspecified"),
        (Ipv4Addr::BROADCAST, 32, "broadcast"),
        (Ipv4Addr::new(0, 0, 0, 0), 8, "\"this network\""),
        (Ipv4Addr::new(10, 0, 0, 0), 8, "private"),
        (
            Ipv4Addr::new(100, 64, 0, 0),
            10,
            "shared (carrier-grade NAT)",
        ),
        (Ipv4Addr::new(127, 0, 0, 0), 8, "loopback"),
        (Ipv4Addr::new(169, 254, 0, 0), 16, "link-local"),
        (Ipv4Addr::new(172, 16, 0, 0), 12, "private"),
        (Ipv4Addr::new(192, 0, 0, 0), 24, "protocol-assignment"),
        (Ipv4Addr::new(192, 0, 2, 0), 24, "documentation"),
        (Ipv4Addr::new(192, 88, 99, 0), 24, "6to4 relay"),
        (Ipv4Addr::new(192, 168, 0, 0), 16, "private"),
        (Ipv4Addr::new(198, 18, 0, 0), 15, "benchmarking"),
        (Ipv4Addr::new(198, 51, 100, 0), 24, "documentation"),
        (Ipv4Addr::new(203, 0, 113, 0), 24, "documentation"),
        (Ipv4Addr::new(224, 0, 0, 0), 4, "multicast"),
        (Ipv4Addr::new(240, 0, 0, 0), 4, "reserved"),
    ];
    RANGES.iter().find_map(|&(base, prefix, kind)| {
        Ipv4Net::new(base, prefix)
            .is_ok_and(|net| net.contains(&ip))
            .then_some(kind)
    })
}

fn special_v6(ip: Ipv6Addr) -> Option<&'static str> {
    const RANGES: &[(Ipv6Addr, u8, &str)] = &[
        (Ipv6Addr::UNSPECIFIED, 128, "unspecified"),
        (Ipv6Addr::LOCALHOST, 128, "loopback"),
        // `::a.b.c.d`, the deprecated IPv4-compatible form.
        (Ipv6Addr::UNSPECIFIED, 96, "IPv4-compatible"),
        (
            Ipv6Addr::new(0x64, 0xff9b, 1, 0, 0, 0, 0, 0),
            48,
            "local-use NAT64",
        ),
        (
            Ipv6Addr::new(0x100, 0, 0, 0, 0, 0, 0, 0),
            64,
            "discard-only",
        ),
        (
            Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0),
            23,
            "protocol-assignment",
        ),
        (
            Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0),
            32,
            "documentation",
        ),
        (
            Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0),
            20,
            "documentation",
        ),
        (
            Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0),
            7,
            "unique local",
        ),
        (Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0), 10, "link-local"),
        (Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0), 10, "site-local"),
        (Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0), 8, "multicast"),
    ];
    if let Some(kind) = RANGES.iter().find_map(|&(base, prefix, kind)| {
        Ipv6Net::new(base, prefix)
            .is_ok_and(|net| net.contains(&ip))
            .then_some(kind)
    }) {
        return Some(kind);
    }
    // Forms that carry an IPv4 address a gateway may deliver to: judged by that address.
    embedded_v4(ip).and_then(special_v4)
}

/// The IPv4 address inside NAT64 (`64:ff9b::/96`) and 6to4 (`2002::/16`) addresses.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let v4 = |hi: u16, lo: u16| {
        let [a, b] = hi.to_be_bytes();
        let [c, d] = lo.to_be_bytes();
        Ipv4Addr::new(a, b, c, d)
    };
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        Some(v4(s[6], s[7]))
    } else if s[0] == 0x2002 {
        Some(v4(s[1], s[2]))
    } else {
        None
    }
}

/// Every address of this machine's interfaces (empty if they cannot be listed; loopback
/// and unspecified addresses are matched apart).
fn local_addresses() -> Vec<IpAddr> {
    odyssey_sandbox::host::interface_addresses()
        .into_iter()
        .map(canonical)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(text: &str) -> SocketAddr {
        text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn special_ranges_are_refused_in_every_spelling() {
        let policy = AddressPolicy::default();
        for refused in [
            "127.0.0.1:80",
            "127.9.9.9:80",
            "10.1.2.3:80",
            "172.31.255.255:80",
            "192.168.1.1:80",
            "100.64.0.1:80",
            "169.254.169.254:80",
            "0.0.0.0:80",
            "255.255.255.255:80",
            "224.0.0.1:80",
            "192.0.2.1:80",
            "198.51.100.7:80",
            "203.0.113.9:80",
            "240.0.0.1:80",
            "[::1]:80",
            "[::]:80",
            "[::ffff:127.0.0.1]:80",
            "[::ffff:10.0.0.1]:80",
            "[::ffff:169.254.169.254]:80",
            "[::127.0.0.1]:80",
            "[64:ff9b::7f00:1]:80",
            "[64:ff9b::a9fe:a9fe]:80",
            "[2002:7f00:1::]:80",
            "[fc00::1]:80",
            "[fd12:3456::1]:80",
            "[fe80::1]:80",
            "[fec0::1]:80",
            "[ff02::1]:80",
            "[2001:db8::1]:80",
        ] {
            let why = policy.check(addr(refused)).expect_err(refused);
            assert!(why.contains("address"), "{refused}: {why}");
        }
        for public in [
            "93.184.215.14:443",
            "1.1.1.1:53",
            "[2606:4700::1111]:443",
            "[::ffff:8.8.8.8]:443",
            "[64:ff9b::808:808]:443",
        ] {
            assert!(policy.check(addr(public)).is_ok(), "{public}");
        }
    }

    #[test]
    fn an_allowed_range_opens_its_addresses_only() {
        let policy = AddressPolicy {
            allowed: vec!["127.0.0.0/8".parse().expect("net")],
            server_listeners: Vec::new(),
        };
        assert!(policy.check(addr("127.0.0.1:8080")).is_ok());
        assert!(policy.check(addr("[::ffff:127.0.0.1]:8080")).is_ok());
        assert!(policy.check(addr("[::1]:8080")).is_err());
        assert!(policy.check(addr("10.0.0.1:8080")).is_err());
    }

    #[test]
    fn the_servers_listeners_are_refused_even_inside_an_allowed_range() {
        let policy = AddressPolicy {
            allowed: vec![
                "127.0.0.0/8".parse().expect("net"),
                "::/0".parse().expect("net"),
            ],
            server_listeners: vec![addr("127.0.0.1:50051"), addr("0.0.0.0:8080")],
        };
        let why = policy.check(addr("127.0.0.1:50051")).expect_err("listener");
        assert!(why.contains("listener of this server"), "{why}");
        assert!(policy.check(addr("[::ffff:127.0.0.1]:50051")).is_err());
        // Bound to one address: another loopback address on that port is someone else.
        assert!(policy.check(addr("127.0.0.2:50051")).is_ok());
        // Bound to every address: any address of this machine on that port is refused.
        for local in [
            "127.0.0.1:8080",
            "127.0.0.5:8080",
            "[::1]:8080",
            "0.0.0.0:8080",
        ] {
            assert!(policy.check(addr(local)).is_err(), "{local}");
        }
        for ip in local_addresses() {
            assert!(policy.check(SocketAddr::new(ip, 8080)).is_err(), "{ip}");
        }
        assert!(policy.check(addr("127.0.0.1:8081")).is_ok());
    }
}
