//! [`Recorder`]: spans and metrics kept in memory (the SDK's in-memory exporters), for
//! tests that assert what an operator would see (feature `testing`).

use opentelemetry::KeyValue;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};

use crate::Telemetry;

/// One instance's telemetry, into memory: every span as it ends, the metrics on demand.
pub struct Recorder {
    spans: InMemorySpanExporter,
    metrics: InMemoryMetricExporter,
    meters: SdkMeterProvider,
    telemetry: Telemetry,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder").finish_non_exhaustive()
    }
}

impl Recorder {
    /// A recorder for requests arriving over `network.transport` `transport`.
    #[must_use]
    pub fn new(transport: &'static str) -> Self {
        let spans = InMemorySpanExporter::default();
        let tracers = SdkTracerProvider::builder()
            .with_simple_exporter(spans.clone())
            .build();
        let metrics = InMemoryMetricExporter::default();
        let meters = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(metrics.clone()).build())
            .build();
        let telemetry = Telemetry::new(&tracers, &meters, transport);
        Recorder {
            spans,
            metrics,
            meters,
            telemetry,
        }
    }

    /// The telemetry to give the server.
    #[must_use]
    pub fn telemetry(&self) -> Telemetry {
        self.telemetry.clone()
    }

    /// Every span ended so far.
    ///
    /// # Panics
    /// If the exporter was shut down.
    #[must_use]
    pub fn spans(&self) -> Vec<SpanData> {
        self.spans.get_finished_spans().expect("the spans")
    }

    /// The first span named `name`.
    ///
    /// # Panics
    /// If there is none (the message lists the names there are).
    #[must_use]
    pub fn span(&self, name: &str) -> SpanData {
        let spans = self.spans();
        spans
            .iter()
            .find(|span| span.name == name)
            .cloned()
            .unwrap_or_else(|| {
                let names: Vec<_> = spans.iter().map(|span| span.name.to_string()).collect();
                panic!("no span {name}; spans: {names:?}")
            })
    }

    /// The sum of the metric `name`'s data points that carry (at least) `attributes`: a
    /// counter's or a gauge's value, a histogram's count.
    ///
    /// # Panics
    /// If the metrics cannot be collected, or `name` is of a kind the servers do not
    /// record.
    #[must_use]
    pub fn value(&self, name: &str, attributes: &[(&str, &str)]) -> f64 {
        self.meters.force_flush().expect("flushed");
        let exported = self.metrics.get_finished_metrics().expect("the metrics");
        let mut points: Vec<(Vec<KeyValue>, f64)> = Vec::new();
        // Cumulative: the last export holds everything so far.
        for scope in exported.last().iter().flat_map(|last| last.scope_metrics()) {
            for metric in scope.metrics().filter(|metric| metric.name() == name) {
                #[allow(clippy::cast_precision_loss)]
                match metric.data() {
                    AggregatedMetrics::F64(MetricData::Histogram(histogram)) => points.extend(
                        histogram
                            .data_points()
                            .map(|p| (p.attributes().cloned().collect(), p.count() as f64)),
                    ),
                    AggregatedMetrics::U64(MetricData::Sum(sum)) => points.extend(
                        sum.data_points()
                            .map(|p| (p.attributes().cloned().collect(), p.value() as f64)),
                    ),
                    AggregatedMetrics::I64(MetricData::Sum(sum)) => points.extend(
                        sum.data_points()
                            .map(|p| (p.attributes().cloned().collect(), p.value() as f64)),
                    ),
                    AggregatedMetrics::U64(MetricData::Gauge(gauge)) => points.extend(
                        gauge
                            .data_points()
                            .map(|p| (p.attributes().cloned().collect(), p.value() as f64)),
                    ),
                    AggregatedMetrics::F64(MetricData::Gauge(gauge)) => points.extend(
                        gauge
                            .data_points()
                            .map(|p| (p.attributes().cloned().collect(), p.value())),
                    ),
                    other => panic!("{name}: unexpected data {other:?}"),
                }
            }
        }
        points
            .iter()
            .filter(|(point, _)| {
                attributes
                    .iter()
                    .all(|(key, value)| attribute(point, key).as_deref() == Some(*value))
            })
            .map(|(_, value)| value)
            .sum()
    }
}

/// The value of `key` among `attributes`, as text.
#[must_use]
pub fn attribute(attributes: &[KeyValue], key: &str) -> Option<String> {
    attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.as_str().into_owned())
}

/// The value of `span`'s attribute `key`, as text.
#[must_use]
pub fn attr(span: &SpanData, key: &str) -> Option<String> {
    attribute(&span.attributes, key)
}
