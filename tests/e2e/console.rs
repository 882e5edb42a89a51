//! The web console (`--console`) with a real HTTP client, as a browser speaks to it: the
//! page and its assets under a Content-Security-Policy, the login that trades the token
//! for an `HttpOnly`, `SameSite=Strict` cookie, that cookie honoured instead of the bearer
//! header only from the console's own origin (gRPC-Web and the gateway alike), logout, and
//! the flag's rules. The page itself is driven in a real browser by `console/test`.

use odyssey_api::v1 as pb;
use reqwest::StatusCode;
use reqwest::header::HeaderMap;

use crate::grpc_web::{frame, grpc_status, unframe};
use crate::support::{TestServer, loopback};

const TOKEN: &str = "console-test-token";

async fn server() -> TestServer {
    TestServer::start_with(|args| {
        args.auth_token = Some(TOKEN.into());
        args.http_listen = Some(loopback());
        args.console = true;
    })
    .await
}

struct Page {
    base: String,
    http: reqwest::Client,
}

impl Page {
    fn new(server: &TestServer) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let addr = server.handle.http_addr().expect("the gateway runs");
        Self {
            base: format!("http://{addr}"),
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .expect("client"),
        }
    }

    async fn get(&self, path: &str) -> reqwest::Response {
        self.http
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .expect("an answer")
    }

    /// `POST /console/login` with `token`, from `origin` when given.
    async fn login(&self, token: &str, origin: Option<&str>) -> reqwest::Response {
        let mut request = self
            .http
            .post(format!("{}/console/login", self.base))
            .json(&serde_json::json!({ "token": token }));
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        request.send().await.expect("an answer")
    }

    /// GetServerInfo over gRPC-Web on the gateway's address with `headers`; its grpc-status.
    async fn server_info(&self, headers: &[(&str, &str)]) -> String {
        let mut request = self
            .http
            .post(format!(
                "{}/odyssey.v1.ServerService/GetServerInfo",
                self.base
            ))
            .header("content-type", "application/grpc-web+proto")
            .header("x-grpc-web", "1")
            .body(frame(&pb::GetServerInfoRequest {}));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.expect("gRPC-Web answers");
        assert_eq!(response.status(), StatusCode::OK);
        let response_headers: HeaderMap = response.headers().clone();
        let body = response.bytes().await.expect("body");
        let (_, trailers) = unframe(&body);
        grpc_status(&response_headers, &trailers).unwrap_or_default()
    }
}

fn cookie_pair(response: &reqwest::Response) -> String {
    let set = response
        .headers()
        .get("set-cookie")
        .expect("a cookie is set")
        .to_str()
        .expect("ASCII")
        .to_owned();
    set.split(';').next().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn the_page_and_its_assets_are_served_under_a_content_security_policy() {
    let server = server().await;
    let page = Page::new(&server);
    let index = page.get("/console/").await;
    assert_eq!(index.status(), StatusCode::OK);
    let csp = index.headers()["content-security-policy"]
        .to_str()
        .expect("ASCII")
        .to_owned();
    for directive in [
        "default-src 'none'",
        "script-src 'self'",
        "connect-src 'self'",
        "frame-ancestors 'none'",
    ] {
        assert!(csp.contains(directive), "{csp}");
    }
    assert!(
        !csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"),
        "{csp}"
    );
    assert_eq!(index.headers()["x-content-type-options"], "nosniff");
    let html = index.text().await.expect("html");
    assert!(
        html.contains(r#"<script type="module" src="console.js">"#),
        "{html}"
    );
    // No inline script and nothing fetched from elsewhere.
    assert!(
        !html.contains("<script>") && !html.contains("http"),
        "{html}"
    );

    let script = page.get("/console/console.js").await;
    assert_eq!(script.status(), StatusCode::OK);
    assert!(
        script.headers()["content-type"]
            .to_str()
            .expect("ASCII")
            .starts_with("text/javascript")
    );
    let script = script.text().await.expect("js");
    assert!(script.contains("/console/login"), "the built console");
    assert!(!script.contains("https://") || !script.contains("fonts.googleapis"));
    assert_eq!(
        page.get("/console/console.css").await.status(),
        StatusCode::OK
    );
    assert_eq!(
        page.get("/console/nothing.js").await.status(),
        StatusCode::NOT_FOUND
    );
    let bare = page.get("/console").await;
    assert_eq!(bare.status(), StatusCode::PERMANENT_REDIRECT);
    assert_eq!(bare.headers()["location"], "/console/");
}

#[tokio::test]
async fn a_login_cookie_stands_in_for_the_token_only_from_the_consoles_own_origin() {
    let server = server().await;
    let page = Page::new(&server);
    let own = page.base.clone();

    // Refused: the wrong token, another origin, and a request that says nothing of where
    // it comes from.
    let wrong = page.login("not-the-token", Some(&own)).await;
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    assert!(wrong.headers().get("set-cookie").is_none());
    let elsewhere = page.login(TOKEN, Some("http://evil.example")).await;
    assert_eq!(elsewhere.status(), StatusCode::FORBIDDEN);
    assert!(elsewhere.headers().get("set-cookie").is_none());
    assert_eq!(
        page.login(TOKEN, None).await.status(),
        StatusCode::FORBIDDEN
    );

    let login = page.login(TOKEN, Some(&own)).await;
    assert_eq!(login.status(), StatusCode::NO_CONTENT);
    let set = login.headers()["set-cookie"]
        .to_str()
        .expect("ASCII")
        .to_owned();
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(set.contains(attribute), "{set}");
    }
    assert!(!set.contains("Secure"), "plain HTTP: {set}");
    assert!(
        !set.contains(TOKEN),
        "the cookie names a login, not the token: {set}"
    );
    let cookie = cookie_pair(&login);

    // gRPC-Web on the gateway's address: the cookie works from the console's origin only.
    assert_eq!(
        page.server_info(&[("cookie", &cookie), ("origin", &own)])
            .await,
        "0"
    );
    assert_eq!(
        page.server_info(&[("cookie", &cookie), ("sec-fetch-site", "same-origin")])
            .await,
        "0"
    );
    assert_eq!(
        page.server_info(&[("cookie", &cookie), ("origin", "http://evil.example")])
            .await,
        "16"
    );
    assert_eq!(
        page.server_info(&[
            ("cookie", &cookie),
            ("origin", &own),
            ("sec-fetch-site", "cross-site")
        ])
        .await,
        "16"
    );
    assert_eq!(page.server_info(&[("cookie", &cookie)]).await, "16");
    assert_eq!(page.server_info(&[("origin", &own)]).await, "16");
    assert_eq!(
        page.server_info(&[("cookie", "odyssey_console=forged"), ("origin", &own)])
            .await,
        "16"
    );
    // The bearer header still works as before.
    let bearer = format!("Bearer {TOKEN}");
    assert_eq!(page.server_info(&[("authorization", &bearer)]).await, "0");

    // The gateway's JSON routes take the cookie the same way.
    let approvals = |headers: Vec<(&'static str, String)>| {
        let mut request = page.http.get(format!("{own}/approvals"));
        for (name, value) in headers {
            request = request.header(name, value);
        }
        async move { request.send().await.expect("an answer").status() }
    };
    assert_eq!(
        approvals(vec![
            ("cookie", cookie.clone()),
            ("sec-fetch-site", "same-origin".into())
        ])
        .await,
        StatusCode::OK
    );
    assert_eq!(
        approvals(vec![
            ("cookie", cookie.clone()),
            ("sec-fetch-site", "cross-site".into())
        ])
        .await,
        StatusCode::UNAUTHORIZED
    );

    // Logging out ends the login: the same cookie no longer works.
    let logout = page
        .http
        .post(format!("{own}/console/logout"))
        .header("cookie", &cookie)
        .header("origin", &own)
        .send()
        .await
        .expect("an answer");
    assert_eq!(logout.status(), StatusCode::NO_CONTENT);
    assert!(
        logout.headers()["set-cookie"]
            .to_str()
            .expect("ASCII")
            .contains("Max-Age=0")
    );
    assert_eq!(
        page.server_info(&[("cookie", &cookie), ("origin", &own)])
            .await,
        "16"
    );
}

#[tokio::test]
async fn without_the_flag_nothing_of_the_console_is_served() {
    let server = TestServer::start_with(|args| {
        args.auth_token = Some(TOKEN.into());
        args.http_listen = Some(loopback());
    })
    .await;
    let page = Page::new(&server);
    assert_eq!(
        page.get("/console/").await.status(),
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        page.login(TOKEN, Some(&page.base.clone())).await.status(),
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn the_console_needs_the_http_listener() {
    let home = tempfile::tempdir().expect("home");
    let mut args = odyssey_server::config::ServeArgs::new(loopback(), home.path().to_owned());
    args.console = true;
    let error = odyssey_server::serve::start(&args)
        .await
        .err()
        .expect("refused")
        .to_string();
    assert!(error.contains("--http-listen"), "{error}");
}
