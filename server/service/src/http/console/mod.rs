//! The web console (`--console`): a single page served from the binary (its built assets
//! are embedded, see [`assets`]) on the HTTP gateway's address, next to gRPC-Web for the
//! calls it makes, so that everything stays same-origin.
//!
//! A person logs in by giving the server's auth token once: `POST /console/login` checks
//! it and answers a cookie naming a random login (never the token), `HttpOnly`,
//! `SameSite=Strict`, `Secure` (and `__Host-`) under TLS. That cookie stands in for the
//! bearer header only on requests from the console's own origin ([`same_origin`]): a
//! request carrying it from anywhere else is treated as carrying nothing. The token never
//! travels in a URL. Every console answer carries a Content-Security-Policy that allows
//! only the console's own script, style and calls.

mod assets;
mod logins;

use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use http::header::{self, HeaderValue};
use http::{HeaderMap, StatusCode};

use super::error::HttpError;
use crate::grpc::auth::constant_time_eq;
pub(crate) use logins::Logins;

/// What every console answer may load and call: only its own files and its own origin.
pub(crate) const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; \
     base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// The console's view of the server's settings.
#[derive(Clone)]
pub(crate) struct Console {
    /// The server's auth token; `None`: the API is open and logging in trades nothing.
    token: Option<Arc<str>>,
    /// Served over TLS: the cookie is `Secure` and `__Host-` prefixed.
    tls: bool,
    logins: Logins,
}

impl Console {
    pub(crate) fn new(token: Option<String>, tls: bool) -> Self {
        Self {
            token: token.filter(|t| !t.is_empty()).map(Arc::from),
            tls,
            logins: Logins::default(),
        }
    }

    fn cookie_name(&self) -> &'static str {
        if self.tls {
            "__Host-odyssey_console"
        } else {
            "odyssey_console"
        }
    }

    fn set_cookie(&self, value: &str, max_age_seconds: u64) -> String {
        let secure = if self.tls { "; Secure" } else { "" };
        format!(
            "{}={value}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age_seconds}{secure}",
            self.cookie_name()
        )
    }

    /// The login the request's cookie names, if it is one this server issued and still
    /// honours.
    fn login_of(&self, headers: &HeaderMap) -> Option<String> {
        let name = self.cookie_name();
        headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value.to_owned())
            .filter(|value| self.logins.is_live(value))
    }
}

/// The console's routes: the page, its assets, login and logout.
pub(crate) fn router(console: Console) -> Router {
    Router::new()
        .route(
            "/console",
            get(|| async { Redirect::permanent("/console/") }),
        )
        .route("/console/", get(assets::index))
        .route("/console/{file}", get(assets::file))
        .route("/console/login", post(login))
        .route("/console/logout", post(logout))
        .with_state(console)
        .layer(axum::middleware::from_fn(secure_headers))
}

#[derive(serde::Deserialize)]
struct LoginBody {
    token: String,
}

/// Trades the token for a login cookie. Only from the console's own page, so another
/// site cannot log a browser in (or probe the token through it).
async fn login(
    State(console): State<Console>,
    headers: HeaderMap,
    Json(body): Json<LoginBody>,
) -> Response {
    if !same_origin(&headers, console.tls) {
        return HttpError::cross_origin().into_response();
    }
    let Some(token) = &console.token else {
        // Nothing to trade: the API needs no token.
        return StatusCode::NO_CONTENT.into_response();
    };
    if !constant_time_eq(body.token.as_bytes(), token.as_bytes()) {
        tracing::info!("console login refused: wrong token");
        return HttpError::wrong_token().into_response();
    }
    let login = console.logins.open();
    let cookie = console.set_cookie(&login, logins::LIFETIME.as_secs());
    tracing::info!("console login");
    (StatusCode::NO_CONTENT, [(header::SET_COOKIE, cookie)]).into_response()
}

/// Forgets the login and clears the cookie.
async fn logout(State(console): State<Console>, headers: HeaderMap) -> Response {
    if !same_origin(&headers, console.tls) {
        return HttpError::cross_origin().into_response();
    }
    if let Some(login) = console.login_of(&headers) {
        console.logins.close(&login);
    }
    (
        StatusCode::NO_CONTENT,
        [(header::SET_COOKIE, console.set_cookie("", 0))],
    )
        .into_response()
}

/// Lets a console login stand in for the bearer token: a request with no `authorization`
/// header, a live login cookie and a same-origin provenance is given the token's header
/// before the API's own check. Anything else passes unchanged (and is refused there if it
/// needs the token).
pub(crate) async fn cookie_auth(
    State(console): State<Console>,
    mut request: Request,
    next: Next,
) -> Response {
    if let Some(token) = &console.token
        && !request.headers().contains_key(header::AUTHORIZATION)
        && same_origin(request.headers(), console.tls)
        && console.login_of(request.headers()).is_some()
        && let Ok(value) = HeaderValue::from_str(&format!("Bearer {token}"))
    {
        request.headers_mut().insert(header::AUTHORIZATION, value);
    }
    next.run(request).await
}

/// Whether a request comes from a page of this very origin: a browser's
/// `Sec-Fetch-Site`, when sent, must say `same-origin`, and its `Origin`, when sent, must
/// be this server as the request names it (`Host`). A request with neither proves nothing
/// and is not trusted.
pub(crate) fn same_origin(headers: &HeaderMap, tls: bool) -> bool {
    let site = headers
        .get("sec-fetch-site")
        .map(|v| v.as_bytes() == b"same-origin");
    let origin = headers.get(header::ORIGIN).map(|origin| {
        let scheme = if tls { "https" } else { "http" };
        headers
            .get(header::HOST)
            .and_then(|host| host.to_str().ok())
            .is_some_and(|host| origin.as_bytes() == format!("{scheme}://{host}").as_bytes())
    });
    match (site, origin) {
        (None, None) => false,
        (site, origin) => site.unwrap_or(true) && origin.unwrap_or(true),
    }
}

/// Headers of every console answer: the policy, no sniffing, no referrer, no framing.
async fn secure_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(k, v)| {
                (
                    http::HeaderName::from_static(k),
                    HeaderValue::from_static(v),
                )
            })
            .collect()
    }

    #[test]
    fn only_requests_from_the_consoles_own_origin_count_as_same_origin() {
        let host = ("host", "127.0.0.1:8474");
        assert!(same_origin(
            &headers(&[host, ("origin", "http://127.0.0.1:8474")]),
            false
        ));
        assert!(same_origin(
            &headers(&[host, ("sec-fetch-site", "same-origin")]),
            false
        ));
        // Another port, another scheme, another site, or nothing said at all.
        assert!(!same_origin(
            &headers(&[host, ("origin", "http://127.0.0.1:9999")]),
            false
        ));
        assert!(!same_origin(
            &headers(&[host, ("origin", "http://127.0.0.1:8474")]),
            true
        ));
        assert!(!same_origin(
            &headers(&[
                host,
                ("origin", "http://127.0.0.1:8474"),
                ("sec-fetch-site", "same-site")
            ]),
            false
        ));
        assert!(!same_origin(&headers(&[host]), false));
        assert!(!same_origin(
            &headers(&[("origin", "http://127.0.0.1:8474")]),
            false
        ));
    }
}
