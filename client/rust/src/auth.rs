//! Bearer-token authentication and deadlines. An interceptor rather than a header set per
//! call, so every generated client made from [`crate::OdysseyClient`] carries the token (and
//! the client's deadline, when it has one) without each call remembering it.

use std::time::Duration;

use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::Interceptor;
use tonic::{Request, Status};

use crate::error::ClientError;

/// Adds `authorization: Bearer <token>` to every request, when a token was given, and a
/// deadline (`grpc-timeout`), when one was set and the request has none of its own.
#[derive(Clone, Debug, Default)]
pub struct BearerAuth {
    header: Option<MetadataValue<Ascii>>,
    deadline: Option<Duration>,
}

impl BearerAuth {
    /// An interceptor for `token`; `None` or an empty token sends no header (a loopback
    /// server without `--auth-token` needs none).
    pub fn new(token: Option<&str>) -> Result<Self, ClientError> {
        let header = match token.map(str::trim).filter(|t| !t.is_empty()) {
            None => None,
            Some(token) => {
                let mut value: MetadataValue<Ascii> = format!("Bearer {token}")
                    .parse()
                    .map_err(|_| ClientError::InvalidToken)?;
                // Keeps the token out of debug output and HPACK tables.
                value.set_sensitive(true);
                Some(value)
            }
        };
        Ok(Self {
            header,
            deadline: None,
        })
    }

    /// The same, giving each call `deadline` to finish in (streams included: a stream
    /// still open then ends with DEADLINE_EXCEEDED).
    pub fn with_deadline(mut self, deadline: Duration) -> Self {
        self.deadline = Some(deadline);
        self
    }
}

impl Interceptor for BearerAuth {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        if let Some(header) = &self.header {
            request
                .metadata_mut()
                .insert("authorization", header.clone());
        }
        if let Some(deadline) = self.deadline
            && !request.metadata().contains_key("grpc-timeout")
        {
            request.set_timeout(deadline);
        }
        Ok(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_the_bearer_header() {
        let mut auth = BearerAuth::new(Some("s3cret")).unwrap();
        let request = auth.call(Request::new(())).unwrap();
        assert_eq!(
            request.metadata().get("authorization").unwrap(),
            "Bearer s3cret"
        );
    }

    #[test]
    fn a_deadline_becomes_the_grpc_timeout_unless_the_call_has_one() {
        let mut auth = BearerAuth::new(None)
            .unwrap()
            .with_deadline(Duration::from_millis(1500));
        let request = auth.call(Request::new(())).unwrap();
        assert_eq!(request.metadata().get("grpc-timeout").unwrap(), "1500000u");
        let mut own = Request::new(());
        own.set_timeout(Duration::from_secs(2));
        let request = auth.call(own).unwrap();
        assert_eq!(request.metadata().get("grpc-timeout").unwrap(), "2000000u");
    }

    #[test]
    fn no_token_no_header() {
        for token in [None, Some(""), Some("  ")] {
            let mut auth = BearerAuth::new(token).unwrap();
            assert!(
                auth.call(Request::new(()))
                    .unwrap()
                    .metadata()
                    .get("authorization")
                    .is_none()
            );
        }
    }

    #[test]
    fn refuses_tokens_that_cannot_be_headers() {
        assert!(matches!(
            BearerAuth::new(Some("a\nb")),
            Err(ClientError::InvalidToken)
        ));
    }
}
