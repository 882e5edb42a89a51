//! Per-bundle and per-agent model overrides: this server runs a bundle's agents on a model
//! the operator chose (another provider, a local server, a cheaper model) instead of the
//! one the bundle names. An override applies when a session is created without an
//! explicit model; a client that names a model still gets it, within the requirements.

use crate::bundle::BundleId;
use crate::model::ModelSpec;

#[derive(Clone, Debug, PartialEq)]
pub struct ModelOverride {
    /// The bundle: `name` (any namespace) or `namespace/name`.
    pub bundle: String,
    /// One agent of the bundle; `None` for every agent.
    pub agent: Option<String>,
    /// Replaces the agent's model whole, config included.
    pub model: ModelSpec,
}

impl ModelOverride {
    /// How closely this override names `bundle`/`agent`; `None` when it does not apply.
    /// A named agent beats a whole bundle, and `namespace/name` beats a bare name.
    fn specificity(&self, bundle: &BundleId, agent: &str) -> Option<u8> {
        let namespaced = match self.bundle.split_once('/') {
            Some((namespace, name)) => {
                if namespace != bundle.namespace || name != bundle.name {
                    return None;
                }
                true
            }
            None if self.bundle == bundle.name => false,
            None => return None,
        };
        let agent_named = match &self.agent {
            Some(wanted) if wanted != agent => return None,
            Some(_) => true,
            None => false,
        };
        Some(u8::from(agent_named) * 2 + u8::from(namespaced))
    }
}

/// The model the most specific override gives `agent` of `bundle`; the first listed wins
/// between equally specific ones.
pub fn find_override<'a>(
    overrides: &'a [ModelOverride],
    bundle: &BundleId,
    agent: &str,
) -> Option<&'a ModelSpec> {
    let mut best: Option<(u8, &ModelOverride)> = None;
    for candidate in overrides {
        if let Some(score) = candidate.specificity(bundle, agent)
            && best.is_none_or(|(top, _)| score > top)
        {
            best = Some((score, candidate));
        }
    }
    best.map(|(_, o)| &o.model)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle(namespace: &str, name: &str) -> BundleId {
        BundleId {
            namespace: namespace.into(),
            name: name.into(),
            version: semver::Version::new(1, 0, 0),
            digest: String::new(),
        }
    }

    fn rule(bundle: &str, agent: Option<&str>, model: &str) -> ModelOverride {
        ModelOverride {
            bundle: bundle.into(),
            agent: agent.map(str::to_owned),
            model: ModelSpec::parse(model).unwrap(),
        }
    }

    #[test]
    fn the_most_specific_override_wins() {
        let rules = [
            rule("demo", None, "ollama/any-demo"),
            rule("team/demo", None, "ollama/team-demo"),
            rule("demo", Some("guide"), "openai/guide"),
            rule("demo", Some("guide"), "openai/second-guide"),
        ];
        let pick = |ns, name, agent| {
            find_override(&rules, &bundle(ns, name), agent).map(ToString::to_string)
        };
        assert_eq!(
            pick("team", "demo", "guide").as_deref(),
            Some("openai/guide")
        );
        assert_eq!(
            pick("team", "demo", "coder").as_deref(),
            Some("ollama/team-demo")
        );
        assert_eq!(
            pick("other", "demo", "coder").as_deref(),
            Some("ollama/any-demo")
        );
        assert_eq!(pick("team", "tools", "guide"), None);
    }
}
