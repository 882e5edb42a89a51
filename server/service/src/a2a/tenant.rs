//! Which Odyssey agent an A2A request is for. A2A's `tenant` names it as
//! `<bundle>.<agent>` (`demo.assistant`, `acme/demo.assistant`, `demo@1.2.0.assistant`);
//! empty means the server's default agent: the operator's `a2a.default_agent`, else the
//! default agent of the first installed bundle (by namespace and name).

use odyssey_runtime::{ErrorKind, OdysseyRuntime, PageRequest};
use tonic::Status;

use crate::grpc::{shorten, to_status};

/// An installed agent that A2A requests can reach.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentRef {
    /// The bundle reference sessions are created from (as the tenant named it).
    pub reference: String,
    pub namespace: String,
    pub name: String,
    pub agent_id: String,
}

impl AgentRef {
    /// The tenant that names this agent.
    pub fn tenant(&self) -> String {
        format!("{}.{}", self.reference, self.agent_id)
    }

    /// Whether a session pinned to `namespace/name` and `agent_id` is this agent's.
    pub fn owns(&self, namespace: &str, name: &str, agent_id: &str) -> bool {
        self.namespace == namespace && self.name == name && self.agent_id == agent_id
    }
}

/// The agent `tenant` names, or the default agent when it is empty: `default` (the
/// operator's `a2a.default_agent`) when set.
pub async fn resolve(
    runtime: &OdysseyRuntime,
    tenant: &str,
    default: Option<&str>,
) -> Result<AgentRef, Status> {
    match (tenant, default) {
        ("", None) => default_agent(runtime).await,
        ("", Some(default)) => named(runtime, default).await.map_err(|e| {
            if e.code() != tonic::Code::InvalidArgument {
                return e;
            }
            Status::failed_precondition(format!(
                "the server's default agent, `{}` (setting a2a.default_agent), names no \
                 installed agent; install it, or name the agent in the request's tenant",
                shorten(default)
            ))
        }),
        (tenant, _) => named(runtime, tenant).await,
    }
}

/// The agent `tenant` names.
async fn named(runtime: &OdysseyRuntime, tenant: &str) -> Result<AgentRef, Status> {
    // Bundle and agent names may hold dots too: try each split, last dot first.
    for (at, _) in tenant.rmatch_indices('.') {
        let (reference, agent_id) = (&tenant[..at], &tenant[at + 1..]);
        if reference.is_empty() || agent_id.is_empty() {
            continue;
        }
        let bundle = match runtime.inspect_bundle(reference).await {
            Ok(bundle) => bundle,
            Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::InvalidArgument) => {
                continue;
            }
            Err(e) => return Err(to_status(e)),
        };
        if bundle.manifest.agent(agent_id).is_some() {
            return Ok(AgentRef {
                reference: reference.to_owned(),
                namespace: bundle.id.namespace.clone(),
                name: bundle.id.name.clone(),
                agent_id: agent_id.to_owned(),
            });
        }
    }
    Err(crate::grpc::invalid(
        "tenant",
        format!(
            "`{}` names no installed agent; write `<bundle>.<agent>`, e.g. `demo.assistant`, \
             or leave it empty for the server's default agent",
            shorten(tenant)
        ),
    ))
}

async fn default_agent(runtime: &OdysseyRuntime) -> Result<AgentRef, Status> {
    let page = runtime
        .list_bundles(None, PageRequest::first(1))
        .await
        .map_err(to_status)?;
    let Some(bundle) = page.items.first() else {
        return Err(Status::failed_precondition(
            "no bundle is installed, so there is no default agent; install one first",
        ));
    };
    let reference = format!("{}/{}", bundle.id.namespace, bundle.id.name);
    // The newest version of that bundle, which the reference resolves to.
    let newest = runtime
        .inspect_bundle(&reference)
        .await
        .map_err(to_status)?;
    Ok(AgentRef {
        reference,
        namespace: newest.id.namespace.clone(),
        name: newest.id.name.clone(),
        agent_id: newest.manifest.default_agent().id.clone(),
    })
}
