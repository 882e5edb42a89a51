//! What the server says about itself.

use odyssey_api::v1 as pb;

use crate::client::OdysseyClient;
use crate::error::ClientError;

impl OdysseyClient {
    /// The server's version, limits, queue, sandbox capabilities and activity.
    pub async fn server_info(&self) -> Result<pb::GetServerInfoResponse, ClientError> {
        let response = crate::retry::read(|| async {
            Ok(self
                .server()
                .get_server_info(pb::GetServerInfoRequest {})
                .await?)
        })
        .await?;
        Ok(response.into_inner())
    }
}
