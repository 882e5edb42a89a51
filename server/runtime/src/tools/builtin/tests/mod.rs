//! Tests of the builtin tools against real temporary folders, a real session log and a
//! really installed bundle.

mod edit;
mod fixture;
mod glob;
mod grep;
mod ls;
mod paths;
mod read;
mod schema;
mod skill;
mod update_plan;
mod write;
