//! Density clustering of the rolling window (SPEC S4 step 4) with linfa's DBSCAN over unit
//! vectors. A cluster is a set of events that restate something; noise points are events
//! nothing else in the window echoes yet (they stay unreflected and may join a cluster in a
//! later cycle). Pure computation: vectors in, index groups out.

use linfa::prelude::*;
use linfa_clustering::Dbscan;
use ndarray::Array2;

/// Groups of row indices, and the rows that belong to no group.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Clustering {
    pub clusters: Vec<Vec<usize>>,
    pub noise: Vec<usize>,
}

/// DBSCAN with `min_points` (the point itself included) and radius `eps` (Euclidean
/// distance between unit vectors). Rows must all have the same length.
pub fn dbscan(vectors: &[Vec<f32>], min_points: usize, eps: f64) -> Clustering {
    let n = vectors.len();
    if n == 0 {
        return Clustering::default();
    }
    let dim = vectors[0].len();
    let mut data = Array2::<f32>::zeros((n, dim));
    for (i, v) in vectors.iter().enumerate() {
        for (j, x) in v.iter().enumerate() {
            data[[i, j]] = *x;
        }
    }
    let params = Dbscan::params(min_points.max(2))
        .tolerance(eps as f32)
        .check()
        .expect("min_points >= 2 and eps > 0 are checked when the config loads");
    let labels = params.transform(&data);
    let mut clusters: Vec<Vec<usize>> = Vec::new();
    let mut noise = Vec::new();
    for (i, label) in labels.iter().enumerate() {
        match label {
            Some(c) => {
                if clusters.len() <= *c {
                    clusters.resize(c + 1, Vec::new());
                }
                clusters[*c].push(i);
            }
            None => noise.push(i),
        }
    }
    clusters.retain(|c| !c.is_empty());
    Clustering { clusters, noise }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_groups_cluster_and_loners_are_noise() {
        let v = |x: f32, y: f32| {
            let n = (x * x + y * y).sqrt();
            vec![x / n, y / n]
        };
        let points = vec![
            v(1.0, 0.0),
            v(1.0, 0.05),
            v(1.0, -0.05),
            v(0.0, 1.0),
            v(0.05, 1.0),
            v(-1.0, -1.0),
        ];
        let c = dbscan(&points, 2, 0.2);
        assert_eq!(c.clusters, vec![vec![0, 1, 2], vec![3, 4]]);
        assert_eq!(c.noise, vec![5]);
    }
}
