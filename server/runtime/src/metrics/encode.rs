//! Writing metric families through `prometheus-client`'s encoder: a descriptor (name,
//! help, type), then one sample per label set. Label values are `&str`s from fixed
//! lists, so a family's size is known in advance.

use std::fmt;

use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;

use super::histogram::Snapshot;

/// One sample's labels: `(name, value)` pairs.
pub type Labels<'a, const N: usize> = [(&'static str, &'a str); N];

/// A counter family; `name` without `_total`, which the encoder appends.
pub fn counters<'a, const N: usize>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    rows: impl IntoIterator<Item = (Labels<'a, N>, u64)>,
) -> fmt::Result {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (labels, value) in rows {
        family
            .encode_family(&labels)?
            .encode_counter::<NoLabelSet, _, u64>(&value, None)?;
    }
    Ok(())
}

/// A gauge family.
pub fn gauges<'a, const N: usize>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    rows: impl IntoIterator<Item = (Labels<'a, N>, i64)>,
) -> fmt::Result {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for (labels, value) in rows {
        family.encode_family(&labels)?.encode_gauge(&value)?;
    }
    Ok(())
}

/// A gauge without labels.
pub fn gauge(encoder: &mut DescriptorEncoder, name: &str, help: &str, value: i64) -> fmt::Result {
    encoder
        .encode_descriptor(name, help, None, MetricType::Gauge)?
        .encode_gauge(&value)
}

/// A histogram family.
pub fn histograms<'a, const N: usize>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    rows: impl IntoIterator<Item = (Labels<'a, N>, Snapshot)>,
) -> fmt::Result {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Histogram)?;
    for (labels, snapshot) in rows {
        family
            .encode_family(&labels)?
            .encode_histogram::<NoLabelSet>(
                snapshot.sum_seconds,
                snapshot.count,
                &snapshot.buckets,
                None,
            )?;
    }
    Ok(())
}

/// An info metric: `{name}_info{labels} 1`.
pub fn info<const N: usize>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    labels: Labels<'_, N>,
) -> fmt::Result {
    encoder
        .encode_descriptor(name, help, None, MetricType::Info)?
        .encode_info(&labels)
}
