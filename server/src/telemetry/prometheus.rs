//! The metrics in Prometheus' text exposition format (0.0.4): what `mcp_http` answers on
//! `GET /metrics` with `MCP_TASKS_PROMETHEUS=1`. An exporter of the meter provider's
//! periodic reader renders every export; a scrape flushes the provider first, so it reads
//! what was recorded up to that moment.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::{
    AggregatedMetrics, Gauge, HistogramDataPoint, Metric, MetricData, ResourceMetrics, SumDataPoint,
};
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider, Temporality};

/// The last rendering of the metrics, shared by the exporter and the endpoint.
#[derive(Debug, Clone, Default)]
pub(super) struct Scrape {
    text: Arc<Mutex<String>>,
}

/// How often the metrics are rendered without a scrape (a scrape renders them anyway).
const RENDER_EVERY: Duration = Duration::from_secs(60);

impl Scrape {
    /// A reader for the meter provider that renders into this scrape.
    pub(super) fn reader(&self) -> PeriodicReader<Scrape> {
        PeriodicReader::builder(self.clone())
            .with_interval(RENDER_EVERY)
            .build()
    }

    /// Everything recorded so far, as Prometheus text: `meters` is flushed first (its
    /// readers export now; it blocks until they did).
    pub(super) fn text(&self, meters: &SdkMeterProvider) -> Option<String> {
        meters.force_flush().ok()?;
        // Poison policy: the text is only ever replaced whole.
        Some(
            self.text
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
        )
    }
}

impl PushMetricExporter for Scrape {
    async fn export(&self, metrics: &ResourceMetrics) -> OTelSdkResult {
        let mut text = String::new();
        for scope in metrics.scope_metrics() {
            for metric in scope.metrics() {
                render(&mut text, metric);
            }
        }
        *self.text.lock().unwrap_or_else(PoisonError::into_inner) = text;
        Ok(())
    }

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        Ok(())
    }

    fn temporality(&self) -> Temporality {
        Temporality::Cumulative
    }
}

/// One metric: its `# HELP` and `# TYPE` lines and its samples.
fn render(text: &mut String, metric: &Metric) {
    let mut name = sanitize(metric.name());
    if metric.unit() == "s" {
        name.push_str("_seconds");
    }
    let help = metric
        .description()
        .replace('\\', "\\\\")
        .replace('\n', "\\n");
    match metric.data() {
        AggregatedMetrics::F64(MetricData::Histogram(histogram)) => {
            let _ = writeln!(text, "# HELP {name} {help}\n# TYPE {name} histogram");
            for point in histogram.data_points() {
                histogram_point(text, &name, point);
            }
        }
        AggregatedMetrics::U64(MetricData::Sum(sum)) => {
            let name = format!("{name}_total");
            let _ = writeln!(text, "# HELP {name} {help}\n# TYPE {name} counter");
            for point in sum.data_points() {
                sample(
                    text,
                    &name,
                    &labels(point.attributes(), None),
                    point.value(),
                );
            }
        }
        AggregatedMetrics::I64(MetricData::Sum(sum)) => {
            let _ = writeln!(text, "# HELP {name} {help}\n# TYPE {name} gauge");
            for point in sum.data_points() {
                sum_point(text, &name, point);
            }
        }
        AggregatedMetrics::U64(MetricData::Gauge(gauge)) => gauge_points(text, &name, &help, gauge),
        AggregatedMetrics::F64(MetricData::Gauge(gauge)) => gauge_points(text, &name, &help, gauge),
        // The servers record no other kind.
        _ => {}
    }
}

/// A gauge's header and points, whatever its number type.
fn gauge_points<T: std::fmt::Display + Copy>(
    text: &mut String,
    name: &str,
    help: &str,
    gauge: &Gauge<T>,
) {
    let _ = writeln!(text, "# HELP {name} {help}\n# TYPE {name} gauge");
    for point in gauge.data_points() {
        sample(text, name, &labels(point.attributes(), None), point.value());
    }
}

fn sum_point(text: &mut String, name: &str, point: &SumDataPoint<i64>) {
    sample(text, name, &labels(point.attributes(), None), point.value());
}

fn histogram_point(text: &mut String, name: &str, point: &HistogramDataPoint<f64>) {
    let mut cumulative = 0;
    let bounds: Vec<String> = point
        .bounds()
        .map(|bound| bound.to_string())
        .chain(["+Inf".to_owned()])
        .collect();
    for (bound, count) in bounds.iter().zip(point.bucket_counts()) {
        cumulative += count;
        let labels = labels(point.attributes(), Some(bound));
        sample(text, &format!("{name}_bucket"), &labels, cumulative);
    }
    let labels = labels(point.attributes(), None);
    sample(text, &format!("{name}_sum"), &labels, point.sum());
    sample(text, &format!("{name}_count"), &labels, point.count());
}

fn sample(text: &mut String, name: &str, labels: &str, value: impl std::fmt::Display) {
    let _ = writeln!(text, "{name}{labels} {value}");
}

/// `{key="value",...}` (with `le` last for a bucket), or nothing.
fn labels<'a>(attributes: impl Iterator<Item = &'a KeyValue>, le: Option<&str>) -> String {
    let mut pairs: Vec<String> = attributes
        .map(|kv| {
            let value = kv.value.as_str();
            let value = value
                .replace('\\', "\\\\")
                .replace('"', "\\\"")
                .replace('\n', "\\n");
            format!("{}=\"{value}\"", sanitize(kv.key.as_str()))
        })
        .collect();
    if let Some(le) = le {
        pairs.push(format!("le=\"{le}\""));
    }
    if pairs.is_empty() {
        String::new()
    } else {
        format!("{{{}}}", pairs.join(","))
    }
}

/// A Prometheus name: `mcp.task.created` → `mcp_task_created`.
fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}
