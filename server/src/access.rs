//! Who a request over HTTP acts for: bearer tokens naming principals (each principal owns
//! its tasks), or the explicit anonymous single-owner mode bound to loopback; and which
//! browser origins may reach the server (DNS-rebinding protection).

use std::net::SocketAddr;

/// Who a request acts for.
pub enum Access {
    /// Bearer tokens, each standing for a principal (the normal mode).
    Tokens(Tokens),
    /// `MCP_TASKS_ANONYMOUS=1`: every request is [`ANONYMOUS_OWNER`]; loopback only.
    Anonymous,
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the tokens.
        f.write_str(&self.describe())
    }
}

/// The one owner of every task in the anonymous mode.
pub const ANONYMOUS_OWNER: &str = "anonymous";

/// The environment variable that turns the anonymous single-owner mode on.
pub const ANONYMOUS_ENV: &str = "MCP_TASKS_ANONYMOUS";

impl Access {
    /// The anonymous mode if `MCP_TASKS_ANONYMOUS=1` (and `addr` is a loopback IP
    /// address, and no token is configured), else the tokens of the environment.
    pub fn from_env(addr: &str) -> Result<Self, String> {
        match std::env::var(ANONYMOUS_ENV).ok().as_deref() {
            None | Some("" | "0") => Tokens::from_env().map(Access::Tokens),
            Some("1") => {
                if std::env::var_os("MCP_TASKS_TOKENS").is_some()
                    || std::env::var_os("MCP_TASKS_TOKENS_FILE").is_some()
                {
                    return Err(format!(
                        "{ANONYMOUS_ENV}=1 serves one anonymous owner and reads no token: \
                         unset MCP_TASKS_TOKENS and MCP_TASKS_TOKENS_FILE, or the anonymous mode"
                    ));
                }
                loopback_only(addr)?;
                Ok(Access::Anonymous)
            }
            Some(other) => Err(format!(
                "{ANONYMOUS_ENV} must be `1` (anonymous single-owner mode) or `0`, not `{}`",
                other.chars().take(20).collect::<String>()
            )),
        }
    }
}

/// Why a request was refused authentication (HTTP `401`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unauthorized {
    /// No `Authorization` header.
    Missing,
    /// A header that is not `Bearer <token>`, or a token no principal holds.
    InvalidToken,
}

impl Unauthorized {
    /// The refusal's message.
    #[must_use]
    pub fn message(self) -> &'static str {
        match self {
            Unauthorized::Missing => "unauthorized: send `Authorization: Bearer <token>`",
            Unauthorized::InvalidToken => "unauthorized: the bearer token is missing or not known",
        }
    }

    /// The `WWW-Authenticate` challenge to send with the `401`.
    #[must_use]
    pub fn challenge(self) -> &'static str {
        match self {
            Unauthorized::Missing => r#"Bearer realm="mcp-tasks""#,
            Unauthorized::InvalidToken => r#"Bearer realm="mcp-tasks", error="invalid_token""#,
        }
    }
}

impl Access {
    /// The principal a request with this `Authorization` header value acts for: the
    /// bearer token's principal, or, in the anonymous mode, [`ANONYMOUS_OWNER`] (no header
    /// is read).
    ///
    /// # Errors
    /// Why the request is refused: no header, or not a known bearer token.
    pub fn authenticate(&self, authorization: Option<&str>) -> Result<&str, Unauthorized> {
        self.principal(authorization).map(|principal| &**principal)
    }

    /// [`authenticate`](Self::authenticate), the principal's name shared (no copy per
    /// request).
    ///
    /// # Errors
    /// As for [`authenticate`](Self::authenticate).
    pub fn principal(
        &self,
        authorization: Option<&str>,
    ) -> Result<&std::sync::Arc<str>, Unauthorized> {
        static ANONYMOUS: std::sync::LazyLock<std::sync::Arc<str>> =
            std::sync::LazyLock::new(|| std::sync::Arc::from(ANONYMOUS_OWNER));
        let tokens = match self {
            Access::Tokens(tokens) => tokens,
            Access::Anonymous => return Ok(&ANONYMOUS),
        };
        let value = authorization.ok_or(Unauthorized::Missing)?;
        value
            .split_once(' ')
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .and_then(|(_, token)| tokens.shared_principal(token.trim()))
            .ok_or(Unauthorized::InvalidToken)
    }

    /// A short description of the mode for the start-up line.
    #[must_use]
    pub fn describe(&self) -> String {
        match self {
            Access::Tokens(tokens) => format!("{} principals", tokens.count()),
            Access::Anonymous => "anonymous single-owner mode, loopback only".to_owned(),
        }
    }
}

/// Refuses any listening address but a loopback IP address: without tokens, the port must
/// not be reachable from another machine.
pub fn loopback_only(addr: &str) -> Result<(), String> {
    match addr.parse::<SocketAddr>() {
        Ok(socket) if socket.ip().is_loopback() => Ok(()),
        _ => Err(format!(
            "the anonymous mode ({ANONYMOUS_ENV}=1) listens on loopback only: \
             MCP_TASKS_HTTP_ADDR must be a loopback IP address such as 127.0.0.1:8808 or \
             [::1]:8808, not `{}`",
            addr.chars().take(80).collect::<String>()
        )),
    }
}

/// The bearer tokens and the principal each one stands for, found by a keyed fingerprint of
/// the token (SipHash under a key random per process: one map lookup whatever the number
/// of principals, its bucket telling an attacker nothing), then compared in time
/// independent of where the bytes differ.
pub struct Tokens {
    by_fingerprint: std::collections::HashMap<u64, Vec<(std::sync::Arc<str>, String)>>,
    key: std::collections::hash_map::RandomState,
    principals: usize,
}

impl Tokens {
    /// A token's fingerprint under this set's key: its key in the map.
    fn fingerprint(key: &std::collections::hash_map::RandomState, token: &str) -> u64 {
        use std::hash::BuildHasher;
        key.hash_one(token.as_bytes())
    }
}

impl Tokens {
    /// Reads `MCP_TASKS_TOKENS` or the file named by `MCP_TASKS_TOKENS_FILE`.
    ///
    /// # Errors
    /// Neither or both set, a file that cannot be read, or what [`parse`](Self::parse)
    /// refuses.
    pub fn from_env() -> Result<Self, String> {
        let inline = std::env::var("MCP_TASKS_TOKENS").ok();
        let file = std::env::var_os("MCP_TASKS_TOKENS_FILE");
        let text = match (inline, file) {
            (Some(_), Some(_)) => {
                return Err("set MCP_TASKS_TOKENS or MCP_TASKS_TOKENS_FILE, not both".into());
            }
            (Some(text), None) => text,
            (None, Some(path)) => std::fs::read_to_string(&path)
                .map_err(|err| format!("cannot read MCP_TASKS_TOKENS_FILE {path:?}: {err}"))?,
            (None, None) => {
                return Err(
                    "no tokens: set MCP_TASKS_TOKENS='alice=token-a,bob=token-b' \
                     or MCP_TASKS_TOKENS_FILE=<file with principal=token lines>"
                        .into(),
                );
            }
        };
        Self::parse(&text)
    }

    /// `principal=token` pairs separated by commas or newlines; `#` starts a comment line.
    ///
    /// # Errors
    /// An entry that is not `principal=token`, an empty principal or token, a token with
    /// whitespace or control characters, a token given twice, or no entry at all.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut pairs: Vec<(String, String)> = Vec::new();
        let entries = text
            .lines()
            .map(str::trim)
            .filter(|line| !line.starts_with('#'))
            .flat_map(|line| line.split(','))
            .map(str::trim)
            .filter(|entry| !entry.is_empty());
        for (n, entry) in entries.enumerate() {
            let Some((principal, token)) = entry.split_once('=') else {
                return Err(format!("token entry {} is not `principal=token`", n + 1));
            };
            let (principal, token) = (principal.trim(), token.trim());
            if principal.is_empty() || token.is_empty() {
                return Err(format!(
                    "token entry {} has an empty principal or token",
                    n + 1
                ));
            }
            if token.chars().any(|c| c.is_whitespace() || c.is_control()) {
                return Err(format!(
                    "the token of `{principal}` contains whitespace or control characters"
                ));
            }
            pairs.push((principal.to_owned(), token.to_owned()));
        }
        Self::from_pairs(pairs)
    }

    /// The tokens of `pairs`, each `(principal, token)`.
    ///
    /// # Errors
    /// A token given twice, or no pair at all.
    pub fn from_pairs(pairs: impl IntoIterator<Item = (String, String)>) -> Result<Self, String> {
        let key = std::collections::hash_map::RandomState::new();
        let mut tokens: std::collections::HashMap<u64, Vec<(std::sync::Arc<str>, String)>> =
            std::collections::HashMap::new();
        let mut count = 0;
        // One shared name per principal, however many tokens it holds.
        let mut names: std::collections::HashMap<String, std::sync::Arc<str>> =
            std::collections::HashMap::new();
        for (principal, token) in pairs {
            let principal = std::sync::Arc::clone(
                names
                    .entry(principal.clone())
                    .or_insert_with(|| std::sync::Arc::from(principal.as_str())),
            );
            let bucket = tokens.entry(Self::fingerprint(&key, &token)).or_default();
            if bucket.iter().any(|(_, known)| *known == token) {
                return Err(format!(
                    "the token of `{principal}` is also given to another entry"
                ));
            }
            bucket.push((principal, token));
            count += 1;
        }
        if count == 0 {
            return Err("the token configuration holds no `principal=token` entry".into());
        }
        Ok(Tokens {
            by_fingerprint: tokens,
            key,
            principals: names.len(),
        })
    }

    /// How many principals hold a token.
    #[must_use]
    pub fn count(&self) -> usize {
        self.principals
    }

    /// The principal of `token`: one lookup by the token's fingerprint, then the token
    /// itself compared in time independent of where it differs.
    #[must_use]
    pub fn principal(&self, token: &str) -> Option<&str> {
        self.shared_principal(token).map(|principal| &**principal)
    }

    /// Whether a token of this set is also one of `other`'s (the admin tokens must not be an
    /// MCP principal's).
    #[cfg(feature = "http")]
    pub(crate) fn shares_a_token(&self, other: &Tokens) -> bool {
        self.by_fingerprint
            .values()
            .flatten()
            .any(|(_, token)| other.shared_principal(token).is_some())
    }

    /// The same, as the shared name every request of that principal uses.
    fn shared_principal(&self, token: &str) -> Option<&std::sync::Arc<str>> {
        // Every token of the bucket is compared (one, but for a fingerprint collision).
        let mut found = None;
        for (principal, known) in self
            .by_fingerprint
            .get(&Self::fingerprint(&self.key, token))?
        {
            if constant_time_eq(known.as_bytes(), token.as_bytes()) {
                found = Some(principal);
            }
        }
        found
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = u8::from(a.len() != b.len());
    for (i, &x) in a.iter().enumerate() {
        diff |= x ^ b.get(i).copied().unwrap_or(!x);
    }
    diff == 0
}

/// Whether a browser origin may talk to this server: loopback origins, and those listed.
pub fn origin_allowed(origin: &str, extra: &[String]) -> bool {
    if extra.iter().any(|allowed| allowed == origin) {
        return true;
    }
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    loopback_authority(rest)
}

/// Whether a `Host` may use a server bound to loopback: a loopback name (any port), or the
/// host of an allowed origin (DNS-rebinding protection).
pub fn host_allowed(host: &str, extra: &[String]) -> bool {
    loopback_authority(host)
        || extra.iter().any(|origin| {
            origin
                .split_once("://")
                .is_some_and(|(_, authority)| authority == host)
        })
}

/// Whether `rest` (an origin's or a `Host`'s `host[:port]`) names a loopback host.
fn loopback_authority(rest: &str) -> bool {
    let host = if rest.starts_with('[') {
        match rest.find(']') {
            Some(end) => &rest[..=end],
            None => return false,
        }
    } else {
        rest.split(':').next().unwrap_or("")
    };
    let after = &rest[host.len()..];
    let port_ok = after.is_empty()
        || after
            .strip_prefix(':')
            .is_some_and(|port| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()));
    port_ok && matches!(host, "localhost" | "127.0.0.1" | "[::1]")
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn a_token_finds_its_principal_and_nothing_else_does() {
        let tokens = Tokens::parse("alice=token-a\nbob=token-b, alice=token-a2").expect("tokens");
        assert_eq!(tokens.count(), 2, "two principals, three tokens");
        assert_eq!(tokens.principal("token-a"), Some("alice"));
        assert_eq!(tokens.principal("token-a2"), Some("alice"));
        assert_eq!(tokens.principal("token-b"), Some("bob"));
        for wrong in ["token-", "token-c", "", "TOKEN-A", "token-a "] {
            assert_eq!(tokens.principal(wrong), None, "{wrong:?}");
        }
        let access = Access::Tokens(tokens);
        let alice = access.principal(Some("Bearer token-a")).expect("alice");
        let again = access
            .principal(Some("bearer token-a2"))
            .expect("alice again");
        assert!(Arc::ptr_eq(alice, again), "one shared name per principal");
        assert_eq!(access.principal(None).err(), Some(Unauthorized::Missing));
        assert_eq!(
            access.principal(Some("Basic token-a")).err(),
            Some(Unauthorized::InvalidToken)
        );
        assert_eq!(Access::Anonymous.authenticate(None), Ok(ANONYMOUS_OWNER));
    }

    #[test]
    fn a_token_given_twice_or_none_at_all_is_refused() {
        assert!(Tokens::parse("alice=same,bob=same").is_err());
        assert!(Tokens::parse("# only a comment").is_err());
        assert!(Tokens::parse("alice").is_err());
        assert!(Tokens::parse("alice=with space").is_err());
    }

    #[test]
    fn hosts_and_origins_are_loopback_or_allowed() {
        let extra = vec!["https://app.example.com".to_owned()];
        for host in ["localhost", "127.0.0.1:8808", "[::1]:80", "app.example.com"] {
            assert!(host_allowed(host, &extra), "{host}");
        }
        for host in [
            "evil.example",
            "localhost.evil",
            "127.0.0.2",
            "app.example.com:1",
        ] {
            assert!(!host_allowed(host, &extra), "{host}");
        }
        assert!(origin_allowed("http://localhost:3000", &extra));
        assert!(origin_allowed("https://app.example.com", &extra));
        assert!(!origin_allowed("http://evil.example", &extra));
    }
}
