//! Bearer-token authentication. An interceptor rather than a header set per call, so every
//! generated client made from [`crate::OdysseyClient`] carries the token without each call
//! remembering it.

use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::Interceptor;
use tonic::{Request, Status};

use crate::error::ClientError;

/// Adds `authorization: Bearer <token>` to every request, when a token was given.
#[derive(Clone, Debug, Default)]
pub struct BearerAuth {
    header: Option<MetadataValue<Ascii>>,
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
        Ok(Self { header })
    }
}

impl Interceptor for BearerAuth {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        if let Some(header) = &self.header {
            request
                .metadata_mut()
                .insert("authorization", header.clone());
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
