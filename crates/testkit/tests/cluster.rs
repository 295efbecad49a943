//! The clustering index measured on generated workloads (the rows DBSCAN sees in a cycle):
//! linfa's exact DBSCAN is the reference, and `SignLsh` must give its clusters.

use dream_core::selection::cluster::{dbscan_with, exact_components, Clustering, Focus, SignLsh};
use dream_core::selection::embed::Builtin;
use dream_testkit::synth::{generate, Spec};
use linfa_nn::distance::L2Dist;
use linfa_nn::{LinearSearch, NearestNeighbour};
use ndarray::Array2;

fn to_rows(points: &[Vec<f32>]) -> Array2<f32> {
    let mut a = Array2::zeros((points.len(), points[0].len()));
    for (i, p) in points.iter().enumerate() {
        for (j, x) in p.iter().enumerate() {
            a[[i, j]] = *x;
        }
    }
    a
}

/// Unit vectors of a generated workload (the rows DBSCAN sees in a cycle).
fn workload(events: usize) -> Array2<f32> {
    let spec = Spec {
        events,
        sessions: events / 45,
        themes: 40,
        ..Spec::default()
    };
    let w = generate(&spec);
    let texts: Vec<&str> = w.events.iter().map(|e| e.text.as_str()).collect();
    let embedder = Builtin::new(256);
    let vectors: Vec<Vec<f32>> = texts.iter().map(|t| embedder.vector(t)).collect();
    let rows: Vec<Vec<f32>> = vectors
        .into_iter()
        .filter(|v| v.iter().any(|x| *x != 0.0))
        .collect();
    to_rows(&rows)
}

fn sorted(c: &Clustering) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = c
        .clusters
        .iter()
        .map(|c| {
            let mut c = c.clone();
            c.sort_unstable();
            c
        })
        .collect();
    out.sort();
    out
}

#[test]
fn the_reference_is_linfas_exact_dbscan() {
    let data = workload(250);
    let linfa = dbscan_with(data.view(), 2, 0.8, LinearSearch);
    let reference = exact_components(data.view(), 0.8);
    assert!(reference.clusters.len() > 5, "a workload with clusters");
    assert_eq!(sorted(&linfa), sorted(&reference));
}

#[test]
fn the_index_gives_exact_dbscans_clusters_on_a_generated_workload() {
    let data = workload(2500);
    let exact = exact_components(data.view(), 0.8);
    let lsh = dbscan_with(data.view(), 2, 0.8, SignLsh::default());
    assert_eq!(sorted(&lsh), sorted(&exact));
    // With a focus (the newest tenth of the rows), the clusters holding a focused row
    // are exactly DBSCAN's.
    let n = data.nrows();
    let rows: Vec<bool> = (0..n).map(|i| i >= n * 9 / 10).collect();
    let focus = Focus {
        rows: rows.clone().into(),
        min_points: 2,
    };
    let focused = dbscan_with(
        data.view(),
        2,
        0.8,
        SignLsh {
            focus: Some(focus),
            ..SignLsh::default()
        },
    );
    let holding = |c: &Clustering| Clustering {
        clusters: c
            .clusters
            .iter()
            .filter(|c| c.iter().any(|&i| rows[i]))
            .cloned()
            .collect(),
        noise: Vec::new(),
    };
    assert_eq!(sorted(&holding(&focused)), sorted(&holding(&exact)));
    assert!(!holding(&exact).clusters.is_empty());
}

#[test]
fn the_index_finds_every_true_neighbour_and_no_false_one_on_a_generated_workload() {
    let data = workload(2500);
    // The search itself, not capped at `max_neighbours` (which a dense row would hit).
    let index = SignLsh {
        max_neighbours: 0,
        ..SignLsh::default()
    }
    .from_batch(&data, L2Dist)
    .unwrap();
    let norms: Vec<f32> = data.rows().into_iter().map(|r| r.dot(&r)).collect();
    let (mut truth, mut found) = (0usize, 0usize);
    for i in (0..data.nrows()).step_by(7) {
        let dots = data.dot(&data.row(i));
        let exact: std::collections::BTreeSet<usize> = (0..data.nrows())
            .filter(|&j| norms[i] + norms[j] - 2.0 * dots[j] < 0.64)
            .collect();
        let got: std::collections::BTreeSet<usize> = index
            .within_range(data.row(i), 0.8)
            .unwrap()
            .into_iter()
            .map(|(_, j)| j)
            .collect();
        assert!(
            got.is_subset(&exact),
            "row {i}: a neighbour exact search does not find"
        );
        truth += exact.len();
        found += got.len();
    }
    // Measured recall on this workload: 1.0 (docs/BENCHMARKS.md has it at larger sizes).
    assert!(
        found as f64 / truth as f64 >= 0.995,
        "recall {found}/{truth}"
    );
}
