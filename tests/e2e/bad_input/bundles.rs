//! Rows for `BundleService`.

use odyssey_api::v1 as pb;
use pb::build_bundle_request::Item as BuildItem;
use pb::import_bundle_request::Item as ImportItem;

use super::{Case, case, done, first, huge};

fn build(options: Option<(&str, bool)>, chunks: &[&[u8]]) -> Vec<pb::BuildBundleRequest> {
    let options = options.map(|(namespace, force)| pb::BuildBundleRequest {
        item: Some(BuildItem::Options(pb::BuildOptions {
            namespace: namespace.into(),
            force,
        })),
    });
    let chunks = chunks.iter().map(|c| pb::BuildBundleRequest {
        item: Some(BuildItem::Chunk(c.to_vec())),
    });
    options.into_iter().chain(chunks).collect()
}

fn import(options: Option<&str>, chunks: &[&[u8]]) -> Vec<pb::ImportBundleRequest> {
    let options = options.map(|namespace| pb::ImportBundleRequest {
        item: Some(ImportItem::Options(pb::ImportOptions {
            namespace: namespace.into(),
            force: false,
        })),
    });
    let chunks = chunks.iter().map(|c| pb::ImportBundleRequest {
        item: Some(ImportItem::Chunk(c.to_vec())),
    });
    options.into_iter().chain(chunks).collect()
}

/// A project archive of the installed bundle's shape, under another name.
fn project_archive() -> Vec<u8> {
    crate::support::Project::replay("other", &[r#"{"text": "hi"}"#]).archive()
}

const GARBAGE: &[u8] = b"this is not a gzip archive";
/// Archive errors name the entry at fault; an unreadable archive fails at its start.
const ARCHIVE_START: &str = "<start of archive>";

pub(super) fn cases() -> Vec<Case> {
    let mut cases = vec![
        case!(
            "BundleService/InitBundle",
            "name not a name",
            InvalidArgument,
            Some("name"),
            |c| {
                done(
                    c.bundles()
                        .init_bundle(pb::InitBundleRequest {
                            name: "Not A Name!".into(),
                        })
                        .await,
                )
            }
        ),
        case!(
            "BundleService/InitBundle",
            "huge name",
            InvalidArgument,
            Some("name"),
            |c| {
                done(
                    c.bundles()
                        .init_bundle(pb::InitBundleRequest { name: huge() })
                        .await,
                )
            }
        ),
        case!(
            "BundleService/BuildBundle",
            "empty stream",
            InvalidArgument,
            Some("chunk"),
            |c| {
                done(
                    c.bundles()
                        .build_bundle(futures::stream::iter(build(None, &[])))
                        .await,
                )
            }
        ),
        case!(
            "BundleService/BuildBundle",
            "options twice",
            InvalidArgument,
            Some("options"),
            |c| {
                let mut messages = build(Some(("", false)), &[]);
                messages.extend(build(Some(("", false)), &[]));
                done(
                    c.bundles()
                        .build_bundle(futures::stream::iter(messages))
                        .await,
                )
            }
        ),
        case!(
            "BundleService/BuildBundle",
            "garbage archive",
            InvalidArgument,
            Some(ARCHIVE_START),
            |c| {
                done(
                    c.bundles()
                        .build_bundle(futures::stream::iter(build(None, &[GARBAGE])))
                        .await,
                )
            }
        ),
        case!(
            "BundleService/BuildBundle",
            "namespace not a name",
            InvalidArgument,
            Some("options.namespace"),
            |c| {
                let archive = project_archive();
                done(
                    c.bundles()
                        .build_bundle(futures::stream::iter(build(
                            Some(("../up", false)),
                            &[&archive],
                        )))
                        .await,
                )
            }
        ),
        case!(
            "BundleService/BuildBundle",
            "huge namespace",
            InvalidArgument,
            Some("options.namespace"),
            |c| {
                let archive = project_archive();
                let namespace = huge();
                done(
                    c.bundles()
                        .build_bundle(futures::stream::iter(build(
                            Some((&namespace, false)),
                            &[&archive],
                        )))
                        .await,
                )
            }
        ),
        case!(
            "BundleService/ListBundles",
            "negative page size",
            InvalidArgument,
            Some("page_size"),
            |c| {
                done(
                    c.bundles()
                        .list_bundles(pb::ListBundlesRequest {
                            page_size: -1,
                            ..Default::default()
                        })
                        .await,
                )
            }
        ),
        case!(
            "BundleService/ListBundles",
            "undecodable page token",
            InvalidArgument,
            Some("page_token"),
            |c| {
                done(
                    c.bundles()
                        .list_bundles(pb::ListBundlesRequest {
                            page_token: "%%%".into(),
                            ..Default::default()
                        })
                        .await,
                )
            }
        ),
        case!(
            "BundleService/ListBundles",
            "page token the server never issued",
            InvalidArgument,
            Some("page_token"),
            |c| {
                // base64url of "forged": decodes, but names no position of this list.
                done(
                    c.bundles()
                        .list_bundles(pb::ListBundlesRequest {
                            page_token: "Zm9yZ2Vk".into(),
                            ..Default::default()
                        })
                        .await,
                )
            }
        ),
        case!(
            "BundleService/ListBundles",
            "namespace not a name",
            InvalidArgument,
            Some("namespace"),
            |c| {
                done(
                    c.bundles()
                        .list_bundles(pb::ListBundlesRequest {
                            namespace: "../up".into(),
                            ..Default::default()
                        })
                        .await,
                )
            }
        ),
        case!(
            "BundleService/ListBundles",
            "huge namespace",
            InvalidArgument,
            Some("namespace"),
            |c| {
                done(
                    c.bundles()
                        .list_bundles(pb::ListBundlesRequest {
                            namespace: huge(),
                            ..Default::default()
                        })
                        .await,
                )
            }
        ),
        case!(
            "BundleService/ImportBundle",
            "empty stream",
            InvalidArgument,
            Some("chunk"),
            |c| {
                done(
                    c.bundles()
                        .import_bundle(futures::stream::iter(import(None, &[])))
                        .await,
                )
            }
        ),
        case!(
            "BundleService/ImportBundle",
            "options after a chunk",
            InvalidArgument,
            Some("options"),
            |c| {
                let mut messages = import(None, &[GARBAGE]);
                messages.extend(import(Some(""), &[]));
                done(
                    c.bundles()
                        .import_bundle(futures::stream::iter(messages))
                        .await,
                )
            }
        ),
        case!(
            "BundleService/ImportBundle",
            "garbage archive",
            InvalidArgument,
            Some(ARCHIVE_START),
            |c| {
                done(
                    c.bundles()
                        .import_bundle(futures::stream::iter(import(None, &[GARBAGE])))
                        .await,
                )
            }
        ),
        case!(
            "BundleService/ImportBundle",
            "namespace not a name",
            InvalidArgument,
            Some("options.namespace"),
            |c| {
                done(
                    c.bundles()
                        .import_bundle(futures::stream::iter(import(Some("Bad/NS"), &[GARBAGE])))
                        .await,
                )
            }
        ),
        case!(
            "BundleService/PushBundle",
            "missing reference",
            InvalidArgument,
            Some("reference"),
            |c| {
                done(
                    c.bundles()
                        .push_bundle(pb::PushBundleRequest {
                            target: "team/demo:1.0.0".into(),
                            ..Default::default()
                        })
                        .await,
                )
            }
        ),
        case!(
            "BundleService/PushBundle",
            "missing target",
            InvalidArgument,
            Some("target"),
            |c| {
                done(
                    c.bundles()
                        .push_bundle(pb::PushBundleRequest {
                            reference: c.reference.clone(),
                            ..Default::default()
                        })
                        .await,
                )
            }
        ),
        case!(
            "BundleService/PushBundle",
            "malformed target",
            InvalidArgument,
            Some("target"),
            |c| {
                done(
                    c.bundles()
                        .push_bundle(pb::PushBundleRequest {
                            reference: c.reference.clone(),
                            target: "Not A Repo!".into(),
                        })
                        .await,
                )
            }
        ),
        case!(
            "BundleService/PushBundle",
            "huge target",
            InvalidArgument,
            Some("target"),
            |c| {
                done(
                    c.bundles()
                        .push_bundle(pb::PushBundleRequest {
                            reference: c.reference.clone(),
                            target: huge(),
                        })
                        .await,
                )
            }
        ),
        case!(
            "BundleService/PushBundle",
            "unknown bundle",
            NotFound,
            None,
            |c| {
                done(
                    c.bundles()
                        .push_bundle(pb::PushBundleRequest {
                            reference: "ghost@1.0.0".into(),
                            target: "team/ghost:1.0.0".into(),
                        })
                        .await,
                )
            }
        ),
        case!(
            "BundleService/PullBundle",
            "missing reference",
            InvalidArgument,
            Some("reference"),
            |c| {
                done(
                    c.bundles()
                        .pull_bundle(pb::PullBundleRequest::default())
                        .await,
                )
            }
        ),
        case!(
            "BundleService/PullBundle",
            "malformed reference",
            InvalidArgument,
            Some("reference"),
            |c| {
                done(
                    c.bundles()
                        .pull_bundle(pb::PullBundleRequest {
                            reference: "Not A Repo!".into(),
                            ..Default::default()
                        })
                        .await,
                )
            }
        ),
        case!(
            "BundleService/PullBundle",
            "huge reference",
            InvalidArgument,
            Some("reference"),
            |c| {
                done(
                    c.bundles()
                        .pull_bundle(pb::PullBundleRequest {
                            reference: huge(),
                            ..Default::default()
                        })
                        .await,
                )
            }
        ),
        case!(
            "BundleService/PullBundle",
            "namespace not a name",
            InvalidArgument,
            Some("namespace"),
            |c| {
                done(
                    c.bundles()
                        .pull_bundle(pb::PullBundleRequest {
                            reference: "team/demo:1.0.0".into(),
                            namespace: "../up".into(),
                            ..Default::default()
                        })
                        .await,
                )
            }
        ),
    ];
    cases.extend(reference_cases());
    cases
}

/// The RPCs naming an installed bundle: missing, malformed, huge, unknown.
fn reference_cases() -> Vec<Case> {
    vec![
        case!(
            "BundleService/InspectBundle",
            "missing reference",
            InvalidArgument,
            Some("reference"),
            |c| {
                done(
                    c.bundles()
                        .inspect_bundle(pb::InspectBundleRequest::default())
                        .await,
                )
            }
        ),
        case!(
            "BundleService/InspectBundle",
            "malformed reference",
            InvalidArgument,
            Some("reference"),
            |c| {
                done(
                    c.bundles()
                        .inspect_bundle(pb::InspectBundleRequest {
                            reference: "matrix@not-a-version".into(),
                        })
                        .await,
                )
            }
        ),
        case!(
            "BundleService/InspectBundle",
            "malformed digest",
            InvalidArgument,
            Some("reference"),
            |c| {
                done(
                    c.bundles()
                        .inspect_bundle(pb::InspectBundleRequest {
                            reference: "@sha256:xyz".into(),
                        })
                        .await,
                )
            }
        ),
        case!(
            "BundleService/InspectBundle",
            "huge reference",
            InvalidArgument,
            Some("reference"),
            |c| {
                done(
                    c.bundles()
                        .inspect_bundle(pb::InspectBundleRequest { reference: huge() })
                        .await,
                )
            }
        ),
        case!(
            "BundleService/InspectBundle",
            "unknown bundle",
            NotFound,
            None,
            |c| {
                done(
                    c.bundles()
                        .inspect_bundle(pb::InspectBundleRequest {
                            reference: "ghost@1.0.0".into(),
                        })
                        .await,
                )
            }
        ),
        case!(
            "BundleService/DeleteBundle",
            "missing reference",
            InvalidArgument,
            Some("reference"),
            |c| {
                done(
                    c.bundles()
                        .delete_bundle(pb::DeleteBundleRequest::default())
                        .await,
                )
            }
        ),
        case!(
            "BundleService/DeleteBundle",
            "malformed reference",
            InvalidArgument,
            Some("reference"),
            |c| {
                done(
                    c.bundles()
                        .delete_bundle(pb::DeleteBundleRequest {
                            reference: "a/b/c".into(),
                        })
                        .await,
                )
            }
        ),
        case!(
            "BundleService/DeleteBundle",
            "huge reference",
            InvalidArgument,
            Some("reference"),
            |c| {
                done(
                    c.bundles()
                        .delete_bundle(pb::DeleteBundleRequest { reference: huge() })
                        .await,
                )
            }
        ),
        case!(
            "BundleService/DeleteBundle",
            "unknown bundle",
            NotFound,
            None,
            |c| {
                done(
                    c.bundles()
                        .delete_bundle(pb::DeleteBundleRequest {
                            reference: "matrix@9.9.9".into(),
                        })
                        .await,
                )
            }
        ),
        case!(
            "BundleService/ExportBundle",
            "missing reference",
            InvalidArgument,
            Some("reference"),
            |c| {
                first(
                    c.bundles()
                        .export_bundle(pb::ExportBundleRequest::default())
                        .await,
                )
                .await
            }
        ),
        case!(
            "BundleService/ExportBundle",
            "malformed reference",
            InvalidArgument,
            Some("reference"),
            |c| {
                first(
                    c.bundles()
                        .export_bundle(pb::ExportBundleRequest {
                            reference: "UPPER".into(),
                        })
                        .await,
                )
                .await
            }
        ),
        case!(
            "BundleService/ExportBundle",
            "huge reference",
            InvalidArgument,
            Some("reference"),
            |c| {
                first(
                    c.bundles()
                        .export_bundle(pb::ExportBundleRequest { reference: huge() })
                        .await,
                )
                .await
            }
        ),
        case!(
            "BundleService/ExportBundle",
            "unknown bundle",
            NotFound,
            None,
            |c| {
                first(
                    c.bundles()
                        .export_bundle(pb::ExportBundleRequest {
                            reference: "ghost".into(),
                        })
                        .await,
                )
                .await
            }
        ),
        case!(
            "BundleService/ListAgents",
            "missing reference",
            InvalidArgument,
            Some("bundle_reference"),
            |c| {
                done(
                    c.bundles()
                        .list_agents(pb::ListAgentsRequest::default())
                        .await,
                )
            }
        ),
        case!(
            "BundleService/ListAgents",
            "malformed reference",
            InvalidArgument,
            Some("bundle_reference"),
            |c| {
                done(
                    c.bundles()
                        .list_agents(pb::ListAgentsRequest {
                            bundle_reference: "matrix@x.y".into(),
                        })
                        .await,
                )
            }
        ),
        case!(
            "BundleService/ListAgents",
            "huge reference",
            InvalidArgument,
            Some("bundle_reference"),
            |c| {
                done(
                    c.bundles()
                        .list_agents(pb::ListAgentsRequest {
                            bundle_reference: huge(),
                        })
                        .await,
                )
            }
        ),
        case!(
            "BundleService/ListAgents",
            "unknown bundle",
            NotFound,
            None,
            |c| {
                done(
                    c.bundles()
                        .list_agents(pb::ListAgentsRequest {
                            bundle_reference: "ghost".into(),
                        })
                        .await,
                )
            }
        ),
        case!(
            "BundleService/ListModels",
            "missing reference",
            InvalidArgument,
            Some("bundle_reference"),
            |c| {
                done(
                    c.bundles()
                        .list_models(pb::ListModelsRequest::default())
                        .await,
                )
            }
        ),
        case!(
            "BundleService/ListModels",
            "malformed reference",
            InvalidArgument,
            Some("bundle_reference"),
            |c| {
                done(
                    c.bundles()
                        .list_models(pb::ListModelsRequest {
                            bundle_reference: "@sha256:00".into(),
                        })
                        .await,
                )
            }
        ),
        case!(
            "BundleService/ListModels",
            "unknown bundle",
            NotFound,
            None,
            |c| {
                done(
                    c.bundles()
                        .list_models(pb::ListModelsRequest {
                            bundle_reference: "ghost".into(),
                        })
                        .await,
                )
            }
        ),
        case!(
            "BundleService/ListSkills",
            "missing reference",
            InvalidArgument,
            Some("bundle_reference"),
            |c| {
                done(
                    c.bundles()
                        .list_skills(pb::ListSkillsRequest::default())
                        .await,
                )
            }
        ),
        case!(
            "BundleService/ListSkills",
            "malformed reference",
            InvalidArgument,
            Some("bundle_reference"),
            |c| {
                done(
                    c.bundles()
                        .list_skills(pb::ListSkillsRequest {
                            bundle_reference: "x@@y".into(),
                        })
                        .await,
                )
            }
        ),
        case!(
            "BundleService/ListSkills",
            "unknown bundle",
            NotFound,
            None,
            |c| {
                done(
                    c.bundles()
                        .list_skills(pb::ListSkillsRequest {
                            bundle_reference: "ghost".into(),
                        })
                        .await,
                )
            }
        ),
    ]
}
