//! Density clustering of the rolling window (SPEC S4 step 4) with linfa's DBSCAN over unit
//! vectors. A cluster is a set of events that restate something; noise points are events
//! nothing else in the window echoes yet (they may join a cluster in a later cycle, when a
//! new event restates them). Pure computation: vectors in, index groups out.
//!
//! # Why a sign-LSH index
//!
//! DBSCAN asks one range query per point. linfa's own indexes answer them exactly, but in
//! 256 or 1536 dimensions a k-d tree or ball tree cannot prune (distances between unrelated
//! texts all concentrate near sqrt(2)), so each query scans nearly every point and the
//! clustering is quadratic: minutes for a 100,000-event window. Exact pruning does not
//! work either: a projection onto fewer dimensions shrinks every distance, and hashed
//! bag-of-words vectors spread their mass over all dimensions. So [`SignLsh`] blocks
//! candidates by random-hyperplane signs (SimHash) and verifies each one with the exact
//! distance, and linfa's DBSCAN itself runs unchanged on top of it:
//!
//! - identical rows (verbatim restatements, repeated tool calls, repeated small talk) form
//!   one group, hashed and verified once;
//! - each group gets `tables * bits` sign bits from Gaussian projections (one matrix
//!   product for the window); its candidates are the groups that share its key in some
//!   table, or a key that differs only in its `probes` least certain bits (the projections
//!   nearest zero: multi-probe LSH);
//! - a cheap filter drops candidates whose sign sketch disagrees in far more bits than the
//!   radius allows (expected disagreement plus four standard deviations), and the rest are
//!   verified from their sparse form (a few dozen non-zero values) or, for dense vectors,
//!   from an eight-bit form of each group held in group order (a quarter of the row's
//!   size: the rows of a 100,000-event window are 51 MB read at random), which decides
//!   wherever the distance is farther from the radius than the eight bits can be wrong;
//!   pairs closer to it are read in full, and those within rounding distance of the radius
//!   are decided by the distance function itself: no false neighbour is ever returned.
//!
//! A true neighbour is missed only when it collides in no table; the recall is measured
//! against exact search (`dream bench --scenario cluster`, docs/BENCHMARKS.md, and the
//! tests below), and a missed pair rarely changes a cluster, since a restated theme is
//! held together by many pairs.
//!
//! # Only the clusters that hold a new event
//!
//! A cycle reflects only on clusters that hold a new event, and most of a window is
//! already consolidated. With a focus (the new rows), the index first collects the rows
//! DBSCAN can reach from them: the new rows, every neighbour of a new row, and every
//! neighbour of a core point collected (a point with at least `min_points` neighbours).
//! Every core point collected keeps all its neighbours, and a non-core point's count can
//! only shrink, so core points, and therefore the clusters that hold a new row, are
//! exactly those of DBSCAN over the whole window; rows outside the set are answered as
//! alone and come out as noise. Old noise, the costliest rows to prove isolated, is then
//! never searched.
//!
//! # A bound on dense neighbourhoods
//!
//! Agents repeat themselves: the same tool output with other numbers, the same request in
//! other words, a theme restated a thousand times. Where thousands of distinct rows lie
//! within the radius of each other, exact DBSCAN reads every pair (its neighbourhoods
//! cover the region), which is quadratic in the region; and where thousands lie just
//! outside it (the common case for a static model, whose vectors all share one large
//! direction), verifying candidates is. So a search stops after [`MAX_NEIGHBOURS`]
//! neighbour groups (never fewer than `min_points`) or [`CHECKS_PER_NEIGHBOUR`] exact
//! checks per neighbour it may keep, whichever comes first, taking each table's share
//! first and reading each bucket from a place of its own, so the links kept are spread
//! over the region. A row with that many neighbours is a core point whatever the rest
//! are, and every link found is kept both ways (a group that found a crowded one is in the
//! crowded one's list too), so the graph DBSCAN walks has at most `2 * MAX_NEIGHBOURS`
//! links per distinct row, and a search costs at most 256 exact distances. A row of a group that already
//! answered as a core point is answered with `min_points` rows (DBSCAN already holds the
//! rest). What this can cost: two rows in crowded places may not find each other, and an
//! old row whose only neighbours are crowded rows may be left out of their cluster; a new
//! row is always searched itself, so it joins a cluster when its first 256 checks find a
//! neighbour. Measured: docs/BENCHMARKS.md ("The heavy scenario with minilm").
//!
//! Windows of at most [`EXHAUSTIVE_GROUPS`] distinct rows are searched exhaustively (every
//! pair verified: exact, and as fast as hashing at that size); data that are not unit
//! vectors and distances other than the Euclidean one use linfa's exact linear search.

use std::sync::{Arc, Mutex};

use linfa::prelude::*;
use linfa::Float;
use linfa_clustering::Dbscan;
use linfa_nn::distance::Distance;
use linfa_nn::{BuildError, NearestNeighbour, NearestNeighbourIndex, NnError};
use ndarray::{Array2, ArrayBase, ArrayView1, ArrayView2, Data, Ix2};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// Up to this many distinct rows, every pair is verified (exact) instead of hashed.
pub const EXHAUSTIVE_GROUPS: usize = 128;

/// Neighbour groups (distinct rows) one search keeps: a row with this many neighbours is
/// a core point whatever the rest are, and its cluster is held together by these links
/// and by the links of its neighbours (see "A bound on dense neighbourhoods").
pub const MAX_NEIGHBOURS: usize = 64;

/// Candidates one capped search verifies with the exact distance, per neighbour it may
/// keep: `MAX_NEIGHBOURS * CHECKS_PER_NEIGHBOUR` in all (see "A bound on dense
/// neighbourhoods").
pub const CHECKS_PER_NEIGHBOUR: usize = 4;

/// Groups of row indices, and the rows that belong to no group.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct Clustering {
    pub clusters: Vec<Vec<usize>>,
    pub noise: Vec<usize>,
}

/// DBSCAN with `min_points` (the point itself included) and radius `eps` (Euclidean
/// distance between unit vectors), over the rows of `data`, with the [`SignLsh`] index.
/// With a `focus` (one flag per row), only the clusters holding a focused row are
/// guaranteed, exactly as DBSCAN over all rows finds them; other rows may come out as
/// noise.
pub fn dbscan(
    data: ArrayView2<'_, f32>,
    min_points: usize,
    eps: f64,
    focus: Option<&[bool]>,
) -> Clustering {
    let mut lsh = SignLsh {
        min_points: min_points.max(2),
        max_neighbours: MAX_NEIGHBOURS.max(min_points),
        ..SignLsh::default()
    };
    if let Some(f) = focus {
        lsh.focus = Some(Focus {
            rows: f.into(),
            min_points: min_points.max(2),
        });
    }
    dbscan_with(data, min_points, eps, lsh)
}

/// DBSCAN with any linfa nearest-neighbour index (for comparing indexes).
pub fn dbscan_with<N: NearestNeighbour>(
    data: ArrayView2<'_, f32>,
    min_points: usize,
    eps: f64,
    nn: N,
) -> Clustering {
    if data.nrows() == 0 || data.ncols() == 0 {
        return Clustering {
            clusters: Vec::new(),
            noise: (0..data.nrows()).collect(),
        };
    }
    let params = Dbscan::params_with(min_points.max(2), linfa_nn::distance::L2Dist, nn)
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

/// Threads for the index's parallel work: the machine's cores, at most four (asked once:
/// the answer comes from cgroup files on Linux).
fn threads() -> usize {
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(4)
    })
}

/// Exact DBSCAN with `min_points = 2`, the reference the index is measured against (in
/// tests and `dream bench`): with a floor of two, every point that has a neighbour is a core
/// point, so the clusters are the connected components of the graph of pairs closer than
/// `eps`, found here from blocks of dot products (`|x - y|^2 = |x|^2 + |y|^2 - 2 x.y`, one
/// matrix product per block of rows). Quadratic: for measuring, not for cycles.
pub fn exact_components(data: ArrayView2<'_, f32>, eps: f64) -> Clustering {
    let n = data.nrows();
    let norms: Vec<f32> = data.rows().into_iter().map(|r| r.dot(&r)).collect();
    let limit = (eps * eps) as f32;
    let mut parent: Vec<usize> = (0..n).collect();
    fn root(parent: &mut [usize], mut x: usize) -> usize {
        while parent[x] != x {
            parent[x] = parent[parent[x]];
            x = parent[x];
        }
        x
    }
    let mut linked = vec![false; n];
    const BLOCK: usize = 1024;
    for start in (0..n).step_by(BLOCK) {
        let end = (start + BLOCK).min(n);
        let dots = data.slice(ndarray::s![start..end, ..]).dot(&data.t());
        for i in start..end {
            let row = dots.row(i - start);
            for j in (i + 1)..n {
                if norms[i] + norms[j] - 2.0 * row[j] < limit {
                    linked[i] = true;
                    linked[j] = true;
                    let (a, b) = (root(&mut parent, i), root(&mut parent, j));
                    if a != b {
                        parent[a] = b;
                    }
                }
            }
        }
    }
    let mut by_root: std::collections::BTreeMap<usize, Vec<usize>> =
        std::collections::BTreeMap::new();
    let mut noise = Vec::new();
    for (i, linked) in linked.iter().enumerate() {
        if *linked {
            let r = root(&mut parent, i);
            by_root.entry(r).or_default().push(i);
        } else {
            noise.push(i);
        }
    }
    let mut clusters: Vec<Vec<usize>> = by_root.into_values().collect();
    clusters.sort_by_key(|c| c[0]);
    Clustering { clusters, noise }
}

/// Random-hyperplane (sign) LSH with multi-probe and exact verification: a
/// [`NearestNeighbour`] for linfa. See the module documentation for why and how.
#[derive(Debug, Clone, PartialEq)]
pub struct SignLsh {
    /// Hash tables.
    pub tables: usize,
    /// Bits per table key; 0 picks one from the number of distinct rows (log2(n) - 3).
    pub bits: usize,
    /// Least certain bits flipped per table (2^probes buckets probed per table).
    pub probes: usize,
    /// Seeds the projections: the same data always give the same clusters.
    pub seed: u64,
    /// Answer only what DBSCAN needs for the clusters holding these rows.
    pub focus: Option<Focus>,
    /// Neighbour groups a search keeps before it stops; see "A bound on dense
    /// neighbourhoods" in the module documentation. 0: unbounded, every search complete
    /// and every answer given in full (for measuring the search itself).
    pub max_neighbours: usize,
    /// DBSCAN's `min_points`: a search keeps at least this many neighbours, and a row whose
    /// group already answered as a core point gets this many back.
    pub min_points: usize,
}

/// The rows whose clusters matter (a cycle's new events), and DBSCAN's `min_points`.
#[derive(Debug, Clone, PartialEq)]
pub struct Focus {
    pub rows: Arc<[bool]>,
    pub min_points: usize,
}

impl Default for SignLsh {
    fn default() -> SignLsh {
        SignLsh {
            tables: 24,
            bits: 0,
            probes: 3,
            seed: 0x5eed_d8ea,
            focus: None,
            max_neighbours: MAX_NEIGHBOURS,
            min_points: 2,
        }
    }
}

impl SignLsh {
    fn bits_for(&self, groups: usize) -> usize {
        if self.bits > 0 {
            return self.bits.min(20);
        }
        let log2 = (usize::BITS - groups.max(1).leading_zeros()) as usize;
        log2.saturating_sub(3).clamp(8, 18)
    }
}

impl NearestNeighbour for SignLsh {
    fn from_batch_with_leaf_size<'a, F: Float, DT: Data<Elem = F>, D: 'a + Distance<F>>(
        &self,
        batch: &'a ArrayBase<DT, Ix2>,
        _leaf_size: usize,
        dist_fn: D,
    ) -> Result<Box<dyn 'a + Send + Sync + NearestNeighbourIndex<F>>, BuildError> {
        if batch.ncols() == 0 {
            return Err(BuildError::ZeroDimension);
        }
        Ok(Box::new(SignLshIndex::build(self, batch.view(), dist_fn)))
    }
}

/// The sign bits two sketches disagree in. Baseline x86-64 has no population-count
/// instruction (each word's count is a dozen shifts and masks); nearly every processor has
/// one, and a search counts a few hundred sketches.
#[multiversion::multiversion(targets("x86_64+avx2+popcnt", "x86_64+popcnt"))]
fn disagreements(a: &[u64], b: &[u64]) -> u32 {
    a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum()
}

/// The dot product of two eight-bit code vectors (exact: at most 127 * 127 per value).
/// Compiled also for AVX2 and AVX-512 and picked by what the processor has when first
/// called: the baseline x86-64 instructions multiply four values at a time, AVX2 sixteen.
#[multiversion::multiversion(targets("x86_64+avx2", "x86_64+avx512f+avx512bw"))]
fn dot8(a: &[i8], b: &[i8]) -> i32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| i32::from(*x) * i32::from(*y))
        .sum()
}

/// Rows hashed per matrix product while building (bounds the scratch memory).
const BLOCK_ROWS: usize = 4096;

struct SignLshIndex<'a, F: Float, D: Distance<F>> {
    points: ArrayView2<'a, F>,
    dist_fn: D,
    tables: usize,
    bits: usize,
    probes: usize,
    /// `dim x (tables * bits)` Gaussian projections.
    proj: Array2<f32>,
    /// Per row, its group of identical rows; per group, its rows
    /// (`group_rows[group_start[g]..group_start[g + 1]]`).
    group_of: Vec<u32>,
    group_start: Vec<u32>,
    group_rows: Vec<u32>,
    /// Per table, per group: the key.
    keys: Vec<u32>,
    /// Per table: bucket start offsets (2^bits + 1) into `members`, the groups sorted by
    /// key, and their sketches in the same order (`words` u64 each), so that scanning a
    /// bucket reads memory in sequence.
    offsets: Vec<Vec<u32>>,
    members: Vec<Vec<u32>>,
    member_sketch: Vec<Vec<u64>>,
    /// All sign bits of each group, `words` u64 per group.
    sketch: Vec<u64>,
    /// Per group, per table, its `probes` least certain bits (group-major), so a search
    /// from a row needs no projection of its own.
    weak: Vec<u8>,
    words: usize,
    /// Per group, its vector as sorted (dimension, value) pairs when at most a quarter of
    /// its values are non-zero (hashed bag-of-words vectors), and its squared norm.
    sparse: Vec<Option<(u32, u32)>>,
    sparse_dims: Vec<u16>,
    sparse_vals: Vec<f32>,
    norm2: Vec<f32>,
    /// Per dense group, its vector in eight bits (`codes8[g * dim..(g + 1) * dim]` times
    /// `scale8[g]`; NaN for a sparse group), the sum of the codes' squares, and how far the
    /// eight-bit vector lies from the real one (`err8[g]`, rounded up). A check decides
    /// from these when the distance is clearly on one side of the radius: they are a
    /// quarter of the rows' size and in group order, where the rows are a window's worth
    /// of memory read at random.
    codes8: Vec<i8>,
    scale8: Vec<f32>,
    sumsq8: Vec<f32>,
    err8: Vec<f32>,
    /// The same for what the eight bits leave (the residual, in eight bits of its own),
    /// and how far the two together lie from the vector: read only for the few pairs the
    /// first eight bits leave undecided.
    rest8: Vec<i8>,
    rest_scale8: Vec<f32>,
    rest_err8: Vec<f32>,
    /// The squared norm of what the codes and their residual give together
    /// (`scale * code + rest_scale * rest`, per value), so a check near the radius is four
    /// integer dot products and no pass over the values in floating point.
    rest_norm2: Vec<f64>,
    /// False when some row is neither a unit vector nor zero, or the distance is not
    /// Euclidean: then every query is answered by exact search.
    hashed: bool,
    /// Few enough groups to verify every pair (no tables are built).
    exhaustive: bool,
    /// Focused rows and min_points (see [`Focus`]).
    focus: Option<Focus>,
    /// Neighbour groups a search keeps (`usize::MAX`: all), and DBSCAN's `min_points`.
    cap: usize,
    min_points: usize,
    scratch: Mutex<Scratch>,
}

/// What queries keep. DBSCAN asks about every row; the rows of a group share their
/// neighbours, so each group's neighbour groups are searched once and remembered (for the
/// radius they were searched with).
struct Scratch {
    seen: Seen,
    range: f64,
    neighbours: Vec<Option<Vec<u32>>>,
    /// With a focus: the groups DBSCAN can reach from the focused rows.
    reach: Option<Vec<bool>>,
    /// Whether the up-front searches for this radius were made.
    searched: bool,
    /// Links found from one side only, waiting for their group's list (see
    /// [`SignLshIndex::link_back`]).
    pending: Vec<Vec<u32>>,
    /// Per group: its first answer held at least `min_points` rows (a core point), so its
    /// other rows are answered briefly.
    answered_core: Vec<bool>,
}

/// "Seen" stamps per group, so a group found in several tables is checked once per search.
struct Seen {
    stamps: Vec<u32>,
    stamp: u32,
}

impl Seen {
    fn new(groups: usize) -> Seen {
        Seen {
            stamps: vec![0; groups],
            stamp: 0,
        }
    }

    /// Start a search: every group unseen.
    fn next(&mut self) -> u32 {
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.stamps.iter_mut().for_each(|s| *s = 0);
            self.stamp = 1;
        }
        self.stamp
    }
}

/// Codes of one point: per table key and weak bits, and the sketch.
struct Codes {
    keys: Vec<u32>,
    weak: Vec<u8>,
    sketch: Vec<u64>,
}

/// The codes of a range of groups from `start`, as one hashing thread computes them:
/// keys (`tables` per group), least certain bits (`tables * probes` per group) and
/// sketches (`words` per group).
struct RangeCodes {
    start: usize,
    keys: Vec<u32>,
    weak: Vec<u8>,
    sketch: Vec<u64>,
}

/// A sparse query: sorted dimensions, values, squared norm.
type SparseQuery = (Vec<u16>, Vec<f32>, f32);

/// FNV-1a over a row's bits: rows with equal hashes are then compared.
fn row_hash<F: Float>(row: &ArrayView1<'_, F>) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for x in row.iter() {
        h ^= u64::from(x.to_f32().unwrap_or(f32::NAN).to_bits());
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The non-zero values of a row as (dimension, value), when at most a quarter are non-zero.
fn sparse_values<F: Float>(row: &ArrayView1<'_, F>) -> Option<Vec<(u16, f32)>> {
    let dim = row.len();
    if dim > usize::from(u16::MAX) {
        return None;
    }
    let mut values = Vec::new();
    for (j, x) in row.iter().enumerate() {
        let x = x.to_f32().unwrap_or(0.0);
        if x != 0.0 {
            values.push((j as u16, x));
            if values.len() * 4 > dim {
                return None;
            }
        }
    }
    Some(values)
}

/// Whether every row is a unit vector or zero (when `hashed` starts true), and each row's hash.
fn unit_rows_and_hashes<F: Float>(
    points: ArrayView2<'_, F>,
    mut hashed: bool,
) -> (bool, Vec<(u64, u32)>) {
    let n = points.nrows();
    let mut by_hash: Vec<(u64, u32)> = Vec::with_capacity(n);
    for (i, row) in points.rows().into_iter().enumerate() {
        if hashed {
            let sq: f64 = row
                .iter()
                .map(|x| x.to_f64().unwrap_or(f64::NAN).powi(2))
                .sum();
            hashed = sq == 0.0 || (sq - 1.0).abs() < 1e-3;
        }
        by_hash.push((row_hash(&row), i as u32));
    }
    (hashed, by_hash)
}

/// Groups of identical rows (equal hashes, then equal values): each row's group, and each
/// group's first row.
fn identical_groups<F: Float>(
    points: ArrayView2<'_, F>,
    mut by_hash: Vec<(u64, u32)>,
) -> (Vec<u32>, Vec<u32>) {
    by_hash.sort_unstable();
    let mut group_of = vec![0u32; points.nrows()];
    let mut reps: Vec<u32> = Vec::new();
    let mut run_start = 0;
    for k in 0..by_hash.len() {
        if k > 0 && by_hash[k].0 != by_hash[k - 1].0 {
            run_start = reps.len();
        }
        let i = by_hash[k].1;
        let row = points.row(i as usize);
        let found = (run_start..reps.len()).find(|&g| points.row(reps[g] as usize) == row);
        group_of[i as usize] = match found {
            Some(g) => g as u32,
            None => {
                reps.push(i);
                reps.len() as u32 - 1
            }
        };
    }
    (group_of, reps)
}

/// Each group's rows, in one array with start offsets (a counting sort of the rows by group).
fn rows_by_group(group_of: &[u32], groups: usize) -> (Vec<u32>, Vec<u32>) {
    let mut group_start = vec![0u32; groups + 1];
    for &g in group_of {
        group_start[g as usize + 1] += 1;
    }
    for g in 0..groups {
        group_start[g + 1] += group_start[g];
    }
    let mut fill = group_start.clone();
    let mut group_rows = vec![0u32; group_of.len()];
    for (i, &g) in group_of.iter().enumerate() {
        group_rows[fill[g as usize] as usize] = i as u32;
        fill[g as usize] += 1;
    }
    (group_start, group_rows)
}
impl<'a, F: Float, D: Distance<F>> SignLshIndex<'a, F, D> {
    /// The index over `points`: its groups of identical rows and, for unit vectors, their
    /// sparse forms, eight-bit codes, keys, sketches and tables.
    fn build(p: &SignLsh, points: ArrayView2<'a, F>, dist_fn: D) -> Self {
        // One pass: unit norms (or the exact fallback) and row hashes.
        let hashed = is_euclidean(&dist_fn, points.ncols());
        let (hashed, by_hash) = unit_rows_and_hashes(points, hashed);
        let (group_of, reps) = identical_groups(points, by_hash);
        let mut index = Self::unhashed(p, points, dist_fn, hashed, group_of, reps.len());
        if !hashed {
            return index;
        }
        let groups = reps.len();
        // Sparse forms and norms are needed either way; keys and tables only for hashing.
        index.keys = vec![0; index.tables * groups];
        index.sketch = vec![0; groups * index.words];
        index.sparse_forms(&reps);
        if index.exhaustive {
            return index;
        }
        index.quantise(&reps);
        index.hash_groups(&reps);
        index.fill_tables(groups);
        index
    }

    /// The index with its groups, projections and settings, and nothing hashed yet.
    fn unhashed(
        p: &SignLsh,
        points: ArrayView2<'a, F>,
        dist_fn: D,
        hashed: bool,
        group_of: Vec<u32>,
        groups: usize,
    ) -> Self {
        let n = points.nrows();
        let dim = points.ncols();
        let tables = p.tables.max(1);
        let (group_start, group_rows) = rows_by_group(&group_of, groups);
        let bits = p.bits_for(groups);
        let probes = p.probes.min(bits).min(8);
        let m = tables * bits;
        let words = m.div_ceil(64);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(p.seed);
        let proj = if hashed && groups > EXHAUSTIVE_GROUPS {
            Array2::from_shape_fn((dim, m), |_| gaussian(&mut rng))
        } else {
            Array2::zeros((dim, 0))
        };
        SignLshIndex {
            points,
            dist_fn,
            tables,
            bits,
            probes,
            proj,
            group_of,
            group_start,
            group_rows,
            keys: Vec::new(),
            offsets: Vec::new(),
            members: Vec::new(),
            member_sketch: Vec::new(),
            sketch: Vec::new(),
            weak: Vec::new(),
            words,
            sparse: Vec::new(),
            sparse_dims: Vec::new(),
            sparse_vals: Vec::new(),
            norm2: Vec::new(),
            codes8: Vec::new(),
            scale8: Vec::new(),
            sumsq8: Vec::new(),
            err8: Vec::new(),
            rest8: Vec::new(),
            rest_scale8: Vec::new(),
            rest_err8: Vec::new(),
            rest_norm2: Vec::new(),
            hashed,
            exhaustive: groups <= EXHAUSTIVE_GROUPS,
            focus: p.focus.clone().filter(|f| f.rows.len() == n),
            cap: if p.max_neighbours == 0 {
                usize::MAX
            } else {
                p.max_neighbours.max(p.min_points)
            },
            min_points: p.min_points.max(1),
            scratch: Mutex::new(Scratch {
                seen: Seen::new(groups),
                range: f64::NAN,
                neighbours: vec![None; groups],
                reach: None,
                searched: false,
                pending: vec![Vec::new(); groups],
                answered_core: vec![false; groups],
            }),
        }
    }

    /// Each group's sparse form (when it has one) and squared norm.
    fn sparse_forms(&mut self, reps: &[u32]) {
        let groups = reps.len();
        self.sparse.reserve(groups);
        self.norm2.reserve(groups);
        for &rep in reps {
            let row = self.points.row(rep as usize);
            match sparse_values(&row) {
                Some(values) => {
                    self.norm2.push(values.iter().map(|v| v.1 * v.1).sum());
                    let at = self.sparse_dims.len() as u32;
                    self.sparse_dims.extend(values.iter().map(|v| v.0));
                    self.sparse_vals.extend(values.iter().map(|v| v.1));
                    self.sparse.push(Some((at, values.len() as u32)));
                }
                None => {
                    self.norm2
                        .push(row.iter().map(|x| x.to_f32().unwrap_or(0.0).powi(2)).sum());
                    self.sparse.push(None);
                }
            }
        }
    }

    /// Keys, least certain bits and sketches of every group, the groups split over the
    /// machine's cores.
    fn hash_groups(&mut self, reps: &[u32]) {
        let groups = reps.len();
        let tables = self.tables;
        let words = self.words;
        let threads = threads();
        let chunk = groups.div_ceil(threads).max(BLOCK_ROWS);
        let parts: Vec<RangeCodes> = std::thread::scope(|s| {
            let index = &*self;
            let handles: Vec<_> = (0..groups)
                .step_by(chunk)
                .map(|start| {
                    s.spawn(move || index.codes_range(start..(start + chunk).min(groups), reps))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a hashing thread"))
                .collect()
        });
        self.weak = vec![0; groups * tables * self.probes];
        let per = tables * self.probes;
        for RangeCodes {
            start,
            keys,
            weak,
            sketch,
        } in parts
        {
            let len = keys.len() / tables;
            self.weak[start * per..(start + len) * per].copy_from_slice(&weak);
            for k in 0..len {
                for t in 0..tables {
                    self.keys[t * groups + start + k] = keys[k * tables + t];
                }
            }
            self.sketch[start * words..(start + len) * words].copy_from_slice(&sketch);
        }
    }

    /// Buckets: a counting sort of the groups by key, per table, with their sketches in
    /// bucket order.
    fn fill_tables(&mut self, groups: usize) {
        let words = self.words;
        let buckets = 1usize << self.bits;
        for t in 0..self.tables {
            let keys = &self.keys[t * groups..(t + 1) * groups];
            let mut offsets = vec![0u32; buckets + 1];
            for &k in keys {
                offsets[k as usize + 1] += 1;
            }
            for b in 0..buckets {
                offsets[b + 1] += offsets[b];
            }
            let mut fill = offsets.clone();
            let mut members = vec![0u32; groups];
            for (g, &k) in keys.iter().enumerate() {
                members[fill[k as usize] as usize] = g as u32;
                fill[k as usize] += 1;
            }
            let mut member_sketch = Vec::with_capacity(groups * words);
            for &g in &members {
                member_sketch
                    .extend_from_slice(&self.sketch[g as usize * words..(g as usize + 1) * words]);
            }
            self.offsets.push(offsets);
            self.members.push(members);
            self.member_sketch.push(member_sketch);
        }
    }

    /// The eight-bit form of every dense group (see `codes8`): each value divided by the
    /// group's largest |value| / 127 and rounded.
    fn quantise(&mut self, reps: &[u32]) {
        let dim = self.points.ncols();
        let groups = reps.len();
        if self.sparse.iter().all(Option::is_some) {
            return;
        }
        self.codes8 = vec![0; groups * dim];
        self.scale8 = vec![f32::NAN; groups];
        self.sumsq8 = vec![0.0; groups];
        self.err8 = vec![0.0; groups];
        self.rest8 = vec![0; groups * dim];
        self.rest_scale8 = vec![0.0; groups];
        self.rest_err8 = vec![0.0; groups];
        self.rest_norm2 = vec![0.0; groups];
        // |x| / 127 per value, rounded: the codes, and what they leave.
        fn codes(values: &[f64], out: &mut [i8]) -> (f32, Vec<f64>) {
            let top = values.iter().fold(0f64, |m, v| m.max(v.abs()));
            if top == 0.0 {
                return (0.0, values.to_vec());
            }
            let scale = (top / 127.0) as f32;
            let rest = values
                .iter()
                .zip(out.iter_mut())
                .map(|(v, o)| {
                    let q = (v / f64::from(scale)).round().clamp(-127.0, 127.0);
                    *o = q as i8;
                    v - q * f64::from(scale)
                })
                .collect();
            (scale, rest)
        }
        let norm =
            |v: &[f64]| (v.iter().map(|x| x * x).sum::<f64>().sqrt() * (1.0 + 1e-6) + 1e-7) as f32;
        for (g, &rep) in reps.iter().enumerate() {
            if self.sparse[g].is_some() {
                continue;
            }
            let row = self.points.row(rep as usize);
            let values: Vec<f64> = row.iter().map(|x| x.to_f64().unwrap_or(0.0)).collect();
            if values.iter().any(|v| !v.is_finite()) || values.iter().all(|v| *v == 0.0) {
                continue;
            }
            let at = g * dim..(g + 1) * dim;
            let (scale, rest) = codes(&values, &mut self.codes8[at.clone()]);
            self.scale8[g] = scale;
            self.sumsq8[g] = self.codes8[at.clone()]
                .iter()
                .map(|q| f32::from(*q) * f32::from(*q))
                .sum();
            self.err8[g] = norm(&rest);
            let (rest_scale, left) = codes(&rest, &mut self.rest8[at.clone()]);
            self.rest_scale8[g] = rest_scale;
            self.rest_err8[g] = norm(&left);
            let (q, r) = (&self.codes8[at.clone()], &self.rest8[at]);
            let (s, t) = (f64::from(scale), f64::from(rest_scale));
            self.rest_norm2[g] = s * s * f64::from(dot8(q, q))
                + 2.0 * s * t * f64::from(dot8(q, r))
                + t * t * f64::from(dot8(r, r));
        }
    }

    /// Whether group `g` is clearly within (`Some(true)`) or clearly beyond
    /// (`Some(false)`) true distance `radius` of group `a`, from their eight-bit forms: the
    /// distance between the eight-bit vectors differs from the real one by at most the sum
    /// of their `err8` (the triangle inequality); for a pair closer to the radius than
    /// that, the same from the codes with their residuals (`rest_err8`). `None` when
    /// neither decides it.
    fn within8(&self, a: usize, g: usize, radius: f64) -> Option<bool> {
        let (sa, sg) = (*self.scale8.get(a)?, *self.scale8.get(g)?);
        if sa.is_nan() || sg.is_nan() {
            return None;
        }
        let dim = self.points.ncols();
        let dot = dot8(
            &self.codes8[a * dim..(a + 1) * dim],
            &self.codes8[g * dim..(g + 1) * dim],
        );
        let (sa, sg) = (f64::from(sa), f64::from(sg));
        let d2 = sa * sa * f64::from(self.sumsq8[a]) + sg * sg * f64::from(self.sumsq8[g])
            - 2.0 * sa * sg * f64::from(dot);
        let d = d2.max(0.0).sqrt();
        let slack = f64::from(self.err8[a] + self.err8[g]) + 1e-6 * radius.max(1.0);
        if d + slack < radius {
            return Some(true);
        } else if d - slack > radius {
            return Some(false);
        }
        // Close to the radius: the codes and their residuals, which lie far closer. With
        // x = sa * qa + ra * pa (per value) and y likewise, |x - y|^2 = |x|^2 + |y|^2 - 2 x.y,
        // and x.y is four exact integer dot products.
        let (ra, rg) = (
            f64::from(self.rest_scale8[a]),
            f64::from(self.rest_scale8[g]),
        );
        let (qa, qg) = (
            &self.codes8[a * dim..(a + 1) * dim],
            &self.codes8[g * dim..(g + 1) * dim],
        );
        let (pa, pg) = (
            &self.rest8[a * dim..(a + 1) * dim],
            &self.rest8[g * dim..(g + 1) * dim],
        );
        let xy = sa * sg * f64::from(dot)
            + sa * rg * f64::from(dot8(qa, pg))
            + ra * sg * f64::from(dot8(pa, qg))
            + ra * rg * f64::from(dot8(pa, pg));
        let d2 = (self.rest_norm2[a] + self.rest_norm2[g] - 2.0 * xy).max(0.0);
        let d = d2.sqrt();
        let slack = f64::from(self.rest_err8[a] + self.rest_err8[g]) + 1e-6 * radius.max(1.0);
        if d + slack < radius {
            Some(true)
        } else if d - slack > radius {
            Some(false)
        } else {
            None
        }
    }

    /// Keys (group-major, `tables` per group), least certain bits and sketches of the
    /// groups in `range`: sparse groups projected from their non-zero values (as queries
    /// are), dense ones by block matrix products.
    fn codes_range(&self, range: std::ops::Range<usize>, reps: &[u32]) -> RangeCodes {
        let (tables, words) = (self.tables, self.words);
        let per = tables * self.probes;
        let m = self.proj.ncols();
        let mut weak = vec![0u8; range.len() * per];
        let mut keys = vec![0u32; range.len() * tables];
        let mut sketch = vec![0u64; range.len() * words];
        let mut projected = vec![0f32; m];
        let mut dense: Vec<usize> = Vec::new();
        for (k, g) in range.clone().enumerate() {
            match self.sparse[g] {
                Some((at, len)) => {
                    self.project_sparse(at, len, &mut projected);
                    self.write_codes(
                        &projected,
                        &mut keys[k * tables..(k + 1) * tables],
                        &mut weak[k * per..(k + 1) * per],
                        &mut sketch[k * words..(k + 1) * words],
                    );
                }
                None => dense.push(k),
            }
        }
        for block in dense.chunks(BLOCK_ROWS) {
            let dim = self.points.ncols();
            let mut rows = Array2::<f32>::zeros((block.len(), dim));
            for (b, &k) in block.iter().enumerate() {
                let row = self.points.row(reps[range.start + k] as usize);
                for (j, x) in row.iter().enumerate() {
                    rows[[b, j]] = x.to_f32().unwrap_or(0.0);
                }
            }
            let product = rows.dot(&self.proj);
            for (b, &k) in block.iter().enumerate() {
                let p = product.row(b);
                let p = p.as_slice().expect("a fresh product is contiguous");
                self.write_codes(
                    p,
                    &mut keys[k * tables..(k + 1) * tables],
                    &mut weak[k * per..(k + 1) * per],
                    &mut sketch[k * words..(k + 1) * words],
                );
            }
        }
        RangeCodes {
            start: range.start,
            keys,
            weak,
            sketch,
        }
    }

    /// The projections of a sparse vector: the sum of its values times the projection rows.
    fn project_sparse(&self, at: u32, len: u32, out: &mut [f32]) {
        out.iter_mut().for_each(|x| *x = 0.0);
        let m = out.len();
        let proj = self
            .proj
            .as_slice()
            .expect("the projection matrix is contiguous");
        for e in at as usize..(at + len) as usize {
            let w = self.sparse_vals[e];
            let d = usize::from(self.sparse_dims[e]);
            for (o, p) in out.iter_mut().zip(&proj[d * m..(d + 1) * m]) {
                *o += w * p;
            }
        }
    }

    fn groups(&self) -> usize {
        self.group_start.len() - 1
    }

    fn rows_of(&self, g: usize) -> &[u32] {
        &self.group_rows[self.group_start[g] as usize..self.group_start[g + 1] as usize]
    }

    /// Keys, weak bits and sketch from a point's projections.
    fn codes_of(&self, projected: &[f32]) -> Codes {
        let mut c = Codes {
            keys: vec![0; self.tables],
            weak: vec![0; self.tables * self.probes],
            sketch: vec![0; self.words],
        };
        self.write_codes(projected, &mut c.keys, &mut c.weak, &mut c.sketch);
        c
    }

    /// [`Self::codes_of`] into given slices: per table the key (bit b set when projection b
    /// is positive) and, when `weak` is not empty, the `probes` bits whose projections are
    /// nearest zero (only queries need those).
    fn write_codes(
        &self,
        projected: &[f32],
        keys: &mut [u32],
        weak: &mut [u8],
        sketch: &mut [u64],
    ) {
        let (bits, probes) = (self.bits, self.probes);
        sketch.iter_mut().for_each(|w| *w = 0);
        for (t, key) in keys.iter_mut().enumerate() {
            let vals = &projected[t * bits..(t + 1) * bits];
            *key = 0;
            for (b, v) in vals.iter().enumerate() {
                if *v > 0.0 {
                    *key |= 1 << b;
                    let bit = t * bits + b;
                    sketch[bit / 64] |= 1 << (bit % 64);
                }
            }
            if weak.is_empty() {
                continue;
            }
            // The `probes` smallest |projection|s, by repeated selection (probes <= 8).
            let mut taken = 0u32;
            for slot in weak[t * probes..(t + 1) * probes].iter_mut() {
                let mut best = (f32::INFINITY, 0usize);
                for (b, v) in vals.iter().enumerate() {
                    if taken >> b & 1 == 0 && v.abs() < best.0 {
                        best = (v.abs(), b);
                    }
                }
                taken |= 1 << best.1;
                *slot = best.1 as u8;
            }
        }
    }

    /// The row a query point is, when it is a row of the indexed batch (linfa's DBSCAN
    /// queries its own rows): its codes are then already known.
    fn row_of(&self, point: &ArrayView1<'_, F>) -> Option<usize> {
        let n = self.points.nrows();
        if n == 0
            || point.len() != self.points.ncols()
            || point.strides() != [self.points.strides()[1]]
        {
            return None;
        }
        let base = self.points.as_ptr() as usize;
        let at = point.as_ptr() as usize;
        let stride = self.points.strides()[0] * std::mem::size_of::<F>() as isize;
        if stride <= 0 || at < base {
            return None;
        }
        let off = at - base;
        let row = off / stride as usize;
        (off.is_multiple_of(stride as usize) && row < n).then_some(row)
    }

    /// A query point's sparse form: its group's when it is a row.
    fn query_sparse(&self, point: &ArrayView1<'_, F>) -> Option<SparseQuery> {
        match self.row_of(point) {
            Some(i) => {
                let g = self.group_of[i] as usize;
                self.sparse[g].map(|(at, len)| {
                    let r = at as usize..(at + len) as usize;
                    (
                        self.sparse_dims[r.clone()].to_vec(),
                        self.sparse_vals[r].to_vec(),
                        self.norm2[g],
                    )
                })
            }
            None => sparse_values(point).map(|values| {
                let norm2 = values.iter().map(|v| v.1 * v.1).sum();
                (
                    values.iter().map(|v| v.0).collect(),
                    values.iter().map(|v| v.1).collect(),
                    norm2,
                )
            }),
        }
    }

    /// Codes and sparse form of a query point. A row's are its group's, kept since the
    /// index was built; another point is projected.
    fn query_of(&self, point: &ArrayView1<'_, F>) -> (Codes, Option<SparseQuery>) {
        let sparse = self.query_sparse(point);
        if let (Some(i), false) = (self.row_of(point), self.weak.is_empty()) {
            let g = self.group_of[i] as usize;
            let groups = self.groups();
            let per = self.tables * self.probes;
            let codes = Codes {
                keys: (0..self.tables)
                    .map(|t| self.keys[t * groups + g])
                    .collect(),
                weak: self.weak[g * per..(g + 1) * per].to_vec(),
                sketch: self.sketch[g * self.words..(g + 1) * self.words].to_vec(),
            };
            return (codes, sparse);
        }
        let projected = match &sparse {
            Some((dims, vals, _)) => {
                let m = self.proj.ncols();
                let proj = self
                    .proj
                    .as_slice()
                    .expect("the projection matrix is contiguous");
                let mut out = ndarray::Array1::<f32>::zeros(m);
                for (d, v) in dims.iter().zip(vals) {
                    let d = usize::from(*d);
                    for (o, p) in out.iter_mut().zip(&proj[d * m..(d + 1) * m]) {
                        *o += v * p;
                    }
                }
                out
            }
            None => {
                let q: Vec<f32> = point.iter().map(|x| x.to_f32().unwrap_or(0.0)).collect();
                ndarray::ArrayView1::from(&q).dot(&self.proj)
            }
        };
        let codes = self.codes_of(projected.as_slice().expect("a fresh vector is contiguous"));
        (codes, sparse)
    }

    /// Sign disagreements beyond which a candidate cannot be within `range`: the expected
    /// count at the radius's angle plus four standard deviations.
    fn max_disagreements(&self, range: f64) -> u32 {
        let m = (self.tables * self.bits) as f64;
        let half = (range / 2.0).min(1.0);
        let p = 2.0 * half.asin() / std::f64::consts::PI;
        (m * p + 4.0 * (m * p * (1.0 - p)).sqrt()).ceil() as u32
    }

    /// The groups within `range` of a point: candidates from the tables (probing the
    /// least certain bits too), filtered by their sign sketches, verified exactly.
    fn search(&self, point: &ArrayView1<'_, F>, range: F, seen: &mut Seen) -> Vec<u32> {
        if self.exhaustive {
            let query_sparse = self.query_sparse(point);
            let r = self.dist_fn.dist_to_rdist(range);
            return (0..self.groups())
                .filter(|&g| self.group_within(point, None, query_sparse.as_ref(), g, r))
                .map(|g| g as u32)
                .collect();
        }
        let (c, query_sparse) = self.query_of(point);
        let limit = self.max_disagreements(range.to_f64().unwrap_or(f64::INFINITY));
        let r = self.dist_fn.dist_to_rdist(range);
        let stamp = seen.next();
        let words = self.words;
        let mut found = Vec::new();
        // With a cap, each table gives at most its share of it in a first pass, so the
        // neighbours kept come from every table's partition of the space (a crowded
        // region split by one table's key is still linked across the split); a second
        // pass fills the cap from what the first left unread.
        let (quota, max_checks) = if self.cap == usize::MAX {
            (usize::MAX, usize::MAX)
        } else {
            (
                self.cap.div_ceil(self.tables).max(1),
                self.cap.saturating_mul(CHECKS_PER_NEIGHBOUR),
            )
        };
        let check_quota = max_checks.div_ceil(self.tables).max(1);
        let mut checks = 0usize;
        let mut cut_short = false;
        let query_group = self.row_of(point).map(|i| self.group_of[i] as usize);
        let spin = match query_group {
            Some(g) => (g as u64 + 1)
                .wrapping_mul(0x9e37_79b9_7f4a_7c15)
                .rotate_left(29) as usize,
            None => 0,
        };
        for pass in 0..2 {
            if pass == 1 && !cut_short {
                break;
            }
            for t in 0..self.tables {
                let weak = &c.weak[t * self.probes..(t + 1) * self.probes];
                let (mut from_table, mut checked) = (0, 0);
                'table: for mask in 0u32..(1 << self.probes) {
                    let mut key = c.keys[t];
                    for (j, bit) in weak.iter().enumerate() {
                        if mask >> j & 1 == 1 {
                            key ^= 1 << bit;
                        }
                    }
                    let (lo, hi) = (
                        self.offsets[t][key as usize] as usize,
                        self.offsets[t][key as usize + 1] as usize,
                    );
                    // Each query reads its bucket from its own place onwards (wrapping),
                    // so capped searches link to scattered members, not to the same first
                    // few of every bucket (which a search from a few new rows could not
                    // get past).
                    let len = hi - lo;
                    let from = if len == 0 { 0 } else { spin % len };
                    for k in (from..len).chain(0..from) {
                        let sk = &self.member_sketch[t][(lo + k) * words..(lo + k + 1) * words];
                        let differ = disagreements(sk, &c.sketch);
                        if differ > limit {
                            continue;
                        }
                        let g = self.members[t][lo + k];
                        let gi = g as usize;
                        if seen.stamps[gi] == stamp {
                            continue;
                        }
                        if pass == 0 && (from_table >= quota || checked >= check_quota) {
                            cut_short = true;
                            break 'table;
                        }
                        seen.stamps[gi] = stamp;
                        checks += 1;
                        checked += 1;
                        if checks > max_checks {
                            return found;
                        }
                        if self.group_within(point, query_group, query_sparse.as_ref(), gi, r) {
                            found.push(g);
                            from_table += 1;
                            if found.len() >= self.cap {
                                return found;
                            }
                        }
                    }
                }
            }
        }
        found
    }

    /// Whether group `g` lies within reduced distance `r` of `point` (a row of group
    /// `query_group`, when it is one). The eight-bit forms decide when the distance is
    /// clearly on one side ([`Self::within8`]); else a fast distance decides (from sparse
    /// dot products when both are sparse, else a vectorised squared distance); a pair
    /// within rounding distance of the radius is decided by the distance function itself,
    /// so the answer is always the distance function's.
    fn group_within(
        &self,
        point: &ArrayView1<'_, F>,
        query_group: Option<usize>,
        query: Option<&SparseQuery>,
        g: usize,
        r: F,
    ) -> bool {
        let r64 = r.to_f64().unwrap_or(f64::INFINITY);
        if let Some(a) = query_group {
            if let Some(within) = self.within8(a, g, r64.max(0.0).sqrt()) {
                return within;
            }
        }
        let row = self.points.row(self.rows_of(g)[0] as usize);
        let margin = 1e-4 * r64.max(1.0);
        let fast = match (query, self.sparse[g]) {
            (Some((qd, qv, qn)), Some((at, len))) => {
                let range = at as usize..(at + len) as usize;
                let dot = sparse_dot(
                    qd,
                    qv,
                    &self.sparse_dims[range.clone()],
                    &self.sparse_vals[range],
                );
                Some(f64::from(qn + self.norm2[g] - 2.0 * dot))
            }
            _ => match (point.as_slice(), row.as_slice()) {
                (Some(a), Some(b)) => squared_distance(a, b).to_f64(),
                _ => None,
            },
        };
        match fast {
            Some(d) if (d - r64).abs() > margin => d < r64,
            _ => self.dist_fn.rdistance(point.reborrow(), row.reborrow()) < r,
        }
    }

    /// The neighbour groups of group `g` (searched once per radius), with the links other
    /// searches found to it.
    fn neighbours_of(&self, g: usize, range: F, scratch: &mut Scratch) -> Vec<u32> {
        if scratch.neighbours[g].is_none() {
            let list = self.search_group(g, range, &mut scratch.seen);
            self.store(g, list, scratch);
        }
        scratch.neighbours[g].clone().unwrap_or_default()
    }

    /// Keep group `g`'s list, with the links waiting for it.
    fn store(&self, g: usize, mut list: Vec<u32>, scratch: &mut Scratch) {
        let waiting = std::mem::take(&mut scratch.pending[g]);
        if !waiting.is_empty() {
            list.extend(waiting);
            list.sort_unstable();
            list.dedup();
        }
        scratch.neighbours[g] = Some(list);
    }

    /// Make the links of these groups' lists go both ways: a search that stopped at
    /// `max_neighbours` may have left out a group that found it. A link to a group not
    /// searched yet waits in `pending` until it is. Returns the groups whose lists grew.
    fn link_back(&self, groups: &[usize], scratch: &mut Scratch) -> Vec<usize> {
        let mut back: Vec<(u32, u32)> = Vec::new();
        for &g in groups {
            if let Some(list) = &scratch.neighbours[g] {
                back.extend(
                    list.iter()
                        .filter(|&&h| h as usize != g)
                        .map(|&h| (h, g as u32)),
                );
            }
        }
        back.sort_unstable();
        back.dedup();
        let mut grown = Vec::new();
        let mut k = 0;
        while k < back.len() {
            let h = back[k].0;
            let mut end = k;
            while end < back.len() && back[end].0 == h {
                end += 1;
            }
            let from = back[k..end].iter().map(|p| p.1);
            match &mut scratch.neighbours[h as usize] {
                Some(list) => {
                    let before = list.len();
                    list.extend(from);
                    list.sort_unstable();
                    list.dedup();
                    if list.len() > before {
                        grown.push(h as usize);
                    }
                }
                None => scratch.pending[h as usize].extend(from),
            }
            k = end;
        }
        grown
    }

    /// The neighbour groups of group `g`, itself included.
    fn search_group(&self, g: usize, range: F, seen: &mut Seen) -> Vec<u32> {
        let row = self.points.row(self.rows_of(g)[0] as usize);
        let mut list = self.search(&row, range, seen);
        // A row is always its own neighbour (distance 0), whatever its hash bits say.
        if !list.contains(&(g as u32)) && range > F::zero() {
            list.push(g as u32);
        }
        list
    }

    /// Search the neighbours of these groups (those not searched yet), spread over the
    /// machine's cores when there are enough of them to be worth threads.
    fn fill_neighbours(&self, groups: &[usize], range: F, scratch: &mut Scratch) {
        let todo: Vec<usize> = groups
            .iter()
            .copied()
            .filter(|&g| scratch.neighbours[g].is_none())
            .collect();
        let threads = threads();
        if threads < 2 || todo.len() < 256 {
            for g in todo {
                self.neighbours_of(g, range, scratch);
            }
            return;
        }
        let total = self.groups();
        let chunk = todo.len().div_ceil(threads);
        let found: Vec<Vec<(usize, Vec<u32>)>> = std::thread::scope(|s| {
            let handles: Vec<_> = todo
                .chunks(chunk)
                .map(|part| {
                    s.spawn(move || {
                        let mut seen = Seen::new(total);
                        part.iter()
                            .map(|&g| (g, self.search_group(g, range, &mut seen)))
                            .collect()
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a search thread"))
                .collect()
        });
        for (g, list) in found.into_iter().flatten() {
            self.store(g, list, scratch);
        }
    }

    /// Rows in a group's list (its neighbourhood's size, the point itself included).
    fn count(&self, g: usize, scratch: &Scratch) -> usize {
        scratch.neighbours[g].as_ref().map_or(0, |list| {
            list.iter().map(|&h| self.rows_of(h as usize).len()).sum()
        })
    }

    /// The groups DBSCAN can reach from the focused rows (see the module documentation),
    /// breadth first, each wave's searches spread over the machine's cores. A group is
    /// expanded (its neighbours reached) once it is focused or a core point; a link found
    /// back to it later can make it one.
    fn reach(&self, focus: &Focus, range: F, scratch: &mut Scratch) -> Vec<bool> {
        let groups = self.groups();
        let mut focused = vec![false; groups];
        for (i, f) in focus.rows.iter().enumerate() {
            if *f {
                focused[self.group_of[i] as usize] = true;
            }
        }
        let mut reach = focused.clone();
        let mut expanded = vec![false; groups];
        let mut wave: Vec<usize> = (0..groups).filter(|&g| focused[g]).collect();
        while !wave.is_empty() {
            self.fill_neighbours(&wave, range, scratch);
            let grown = self.link_back(&wave, scratch);
            let mut next = Vec::new();
            for g in wave.into_iter().chain(grown) {
                if expanded[g] || !reach[g] {
                    continue;
                }
                if focused[g] || self.count(g, scratch) >= focus.min_points {
                    expanded[g] = true;
                    for &h in scratch.neighbours[g].as_deref().unwrap_or_default() {
                        if !reach[h as usize] {
                            reach[h as usize] = true;
                            next.push(h as usize);
                        }
                    }
                }
            }
            wave = next;
        }
        reach
    }

    fn exact(&self, point: ArrayView1<'_, F>, range: F) -> Vec<(ArrayView1<'_, F>, usize)> {
        let r = self.dist_fn.dist_to_rdist(range);
        self.points
            .rows()
            .into_iter()
            .enumerate()
            .filter(|(_, row)| self.dist_fn.rdistance(point.reborrow(), row.reborrow()) < r)
            .map(|(i, row)| (row, i))
            .collect()
    }
}

/// Whether a distance function is the Euclidean one with squared reduced distances (what
/// the sign bits and the fast check assume), probed on the 3-4-5 triangle.
fn is_euclidean<F: Float, D: Distance<F>>(dist_fn: &D, dim: usize) -> bool {
    if dim < 2 {
        return false;
    }
    let zero = ndarray::Array1::<F>::zeros(dim);
    let mut p = ndarray::Array1::<F>::zeros(dim);
    p[0] = F::from_f64(3.0).expect("a float");
    p[1] = F::from_f64(4.0).expect("a float");
    let d = dist_fn
        .distance(zero.view(), p.view())
        .to_f64()
        .unwrap_or(f64::NAN);
    let rd = dist_fn
        .rdistance(zero.view(), p.view())
        .to_f64()
        .unwrap_or(f64::NAN);
    (d - 5.0).abs() < 1e-4 && (rd - 25.0).abs() < 1e-3
}

/// Dot product of two sparse vectors given as sorted (dimension, value) lists.
fn sparse_dot(ad: &[u16], av: &[f32], bd: &[u16], bv: &[f32]) -> f32 {
    let (mut i, mut j, mut dot) = (0, 0, 0f32);
    while i < ad.len() && j < bd.len() {
        match ad[i].cmp(&bd[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                dot += av[i] * bv[j];
                i += 1;
                j += 1;
            }
        }
    }
    dot
}

/// Squared Euclidean distance with eight independent sums, so the compiler can use
/// vector instructions (a single running sum cannot be reordered).
fn squared_distance<F: Float>(a: &[F], b: &[F]) -> F {
    let mut acc = [F::zero(); 8];
    let mut ca = a.chunks_exact(8);
    let mut cb = b.chunks_exact(8);
    for (x, y) in (&mut ca).zip(&mut cb) {
        for l in 0..8 {
            let d = x[l] - y[l];
            acc[l] += d * d;
        }
    }
    let mut tail = F::zero();
    for (x, y) in ca.remainder().iter().zip(cb.remainder()) {
        let d = *x - *y;
        tail += d * d;
    }
    acc.iter().fold(tail, |s, v| s + *v)
}

fn gaussian(rng: &mut Xoshiro256PlusPlus) -> f32 {
    // Box-Muller: enough for projections whose only use is their sign.
    let u1: f64 = rng.gen_range(f64::MIN_POSITIVE..1.0);
    let u2: f64 = rng.gen();
    ((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()) as f32
}

impl<F: Float, D: Distance<F>> NearestNeighbourIndex<F> for SignLshIndex<'_, F, D> {
    fn k_nearest(
        &self,
        point: ArrayView1<'_, F>,
        k: usize,
    ) -> Result<Vec<(ArrayView1<'_, F>, usize)>, NnError> {
        // DBSCAN never asks; answer exactly for completeness.
        if point.len() != self.points.ncols() {
            return Err(NnError::WrongDimension);
        }
        let mut all: Vec<(F, usize)> = self
            .points
            .rows()
            .into_iter()
            .enumerate()
            .map(|(i, row)| (self.dist_fn.rdistance(point.reborrow(), row), i))
            .collect();
        all.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
        Ok(all
            .into_iter()
            .take(k)
            .map(|(_, i)| (self.points.row(i), i))
            .collect())
    }

    fn within_range(
        &self,
        point: ArrayView1<'_, F>,
        range: F,
    ) -> Result<Vec<(ArrayView1<'_, F>, usize)>, NnError> {
        if point.len() != self.points.ncols() {
            return Err(NnError::WrongDimension);
        }
        if !self.hashed {
            return Ok(self.exact(point, range));
        }
        let mut guard = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        let scratch = &mut *guard;
        let range64 = range.to_f64().unwrap_or(f64::INFINITY);
        if scratch.range != range64 {
            scratch.neighbours.iter_mut().for_each(|n| *n = None);
            scratch.reach = None;
            scratch.searched = false;
            scratch.pending.iter_mut().for_each(Vec::clear);
            scratch.answered_core.iter_mut().for_each(|a| *a = false);
            scratch.range = range64;
        }
        let Some(i) = self.row_of(&point) else {
            // A point that is not one of the rows: search it, no focus.
            let found = self.search(&point, range, &mut scratch.seen);
            return Ok(found
                .iter()
                .flat_map(|&g| self.rows_of(g as usize))
                .map(|&r| (self.points.row(r as usize), r as usize))
                .collect());
        };
        let g = self.group_of[i] as usize;
        if !scratch.searched {
            // The first question: search what DBSCAN will ask about, in parallel.
            scratch.searched = true;
            if self.focus.is_none() {
                let all: Vec<usize> = (0..self.groups()).collect();
                self.fill_neighbours(&all, range, scratch);
                self.link_back(&all, scratch);
            }
        }
        if let Some(focus) = &self.focus {
            if scratch.reach.is_none() {
                scratch.reach = Some(self.reach(focus, range, scratch));
            }
            if !scratch.reach.as_ref().is_some_and(|r| r[g]) {
                // Unreachable from any focused row: its cluster, if any, holds none.
                return Ok(vec![(self.points.row(i), i)]);
            }
        }
        let list = self.neighbours_of(g, range, scratch);
        let reach = scratch.reach.as_ref();
        // Another row of a group that already answered as a core point: DBSCAN has put
        // every row of that answer in its cluster or its queue, so only the count is still
        // asked (`min_points` rows say "core"). This keeps a group of many identical rows
        // from being answered in full once per row.
        let brief = scratch.answered_core[g] && self.cap != usize::MAX;
        let mut out = Vec::new();
        for h in list {
            if reach.is_some_and(|r| !r[h as usize]) {
                continue;
            }
            out.extend(
                self.rows_of(h as usize)
                    .iter()
                    .map(|&r| (self.points.row(r as usize), r as usize)),
            );
            if brief && out.len() >= self.min_points {
                out.truncate(self.min_points);
                break;
            }
        }
        if out.len() >= self.min_points {
            scratch.answered_core[g] = true;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use linfa_nn::distance::L2Dist;
    use ndarray::Array2;

    pub(super) fn rows(points: &[Vec<f32>]) -> Array2<f32> {
        let mut a = Array2::zeros((points.len(), points[0].len()));
        for (i, p) in points.iter().enumerate() {
            for (j, x) in p.iter().enumerate() {
                a[[i, j]] = *x;
            }
        }
        a
    }

    #[test]
    fn dense_groups_cluster_and_loners_are_noise() {
        let v = |x: f32, y: f32| {
            let n = (x * x + y * y).sqrt();
            vec![x / n, y / n]
        };
        let points = rows(&[
            v(1.0, 0.0),
            v(1.0, 0.05),
            v(1.0, -0.05),
            v(0.0, 1.0),
            v(0.05, 1.0),
            v(-1.0, -1.0),
        ]);
        for c in [
            dbscan(points.view(), 2, 0.2, None),
            dbscan_with(points.view(), 2, 0.2, SignLsh::default()),
        ] {
            assert_eq!(c.clusters, vec![vec![0, 1, 2], vec![3, 4]]);
            assert_eq!(c.noise, vec![5]);
        }
    }

    /// `n` distinct unit vectors in `dim` dimensions, all within a small angle of
    /// `centre` (near-duplicates: every pair within 0.2 of each other).
    fn blob(n: usize, dim: usize, centre: usize, seed: u64) -> Vec<Vec<f32>> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        (0..n)
            .map(|_| {
                let mut v: Vec<f32> = (0..dim).map(|_| 0.01 * gaussian(&mut rng)).collect();
                v[centre] += 1.0;
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                v.iter().map(|x| x / norm).collect()
            })
            .collect()
    }

    /// Every row's answer, in order, as linfa's DBSCAN would ask (rows of a group that
    /// answered as a core point answered briefly): the total is the work DBSCAN does.
    fn answered(points: &Array2<f32>, lsh: SignLsh, eps: f32) -> usize {
        let index = lsh.from_batch(points, L2Dist).unwrap();
        (0..points.nrows())
            .map(|i| index.within_range(points.row(i), eps).unwrap().len())
            .sum()
    }

    #[test]
    fn the_eight_bit_dot_product_is_exact_on_every_processor_path() {
        // Whichever build of `dot8` this processor runs (baseline, AVX2, AVX-512), it is
        // the exact integer sum, at the extremes and for lengths that leave a remainder.
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        for len in [0, 1, 7, 16, 31, 48, 64, 127, 128, 256, 1536] {
            let a: Vec<i8> = (0..len).map(|_| rng.gen_range(-127..=127)).collect();
            let b: Vec<i8> = (0..len).map(|_| rng.gen_range(-127..=127)).collect();
            let plain: i64 = a
                .iter()
                .zip(&b)
                .map(|(x, y)| i64::from(*x) * i64::from(*y))
                .sum();
            assert_eq!(i64::from(dot8(&a, &b)), plain, "length {len}");
            let top = vec![127i8; len];
            let bottom = vec![-127i8; len];
            assert_eq!(i64::from(dot8(&top, &top)), 16129 * len as i64);
            assert_eq!(i64::from(dot8(&top, &bottom)), -16129 * len as i64);
        }
    }

    #[test]
    fn the_eight_bit_check_never_contradicts_the_exact_distance() {
        // Dense unit vectors spread over distances around each radius tried; a zero row
        // (a vector not cached yet) has no eight-bit form.
        let dim = 48;
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let mut v: Vec<Vec<f32>> = Vec::new();
        for c in 0..8 {
            for k in 0..40 {
                let spread = 0.05 * (1 + k % 8) as f32;
                let mut p: Vec<f32> = (0..dim).map(|_| spread * gaussian(&mut rng)).collect();
                p[c] += 1.0;
                let n = p.iter().map(|x| x * x).sum::<f32>().sqrt();
                v.push(p.iter().map(|x| x / n).collect());
            }
        }
        v.push(vec![0.0; dim]);
        let points = rows(&v);
        let index = SignLshIndex::build(&SignLsh::default(), points.view(), L2Dist);
        assert!(!index.exhaustive && index.groups() == v.len());
        let (mut decided, mut undecided) = (0, 0);
        for radius in [0.3, 0.7, 1.0, 1.3] {
            for a in 0..v.len() {
                for g in (a % 7..v.len()).step_by(7) {
                    let exact = squared_distance(&v[a], &v[g]).sqrt() as f64;
                    let group = |row: usize| index.group_of[row] as usize;
                    match index.within8(group(a), group(g), radius) {
                        Some(within) => {
                            decided += 1;
                            assert_eq!(within, exact < radius, "{a} {g} at {radius}: {exact}");
                        }
                        None => undecided += 1,
                    }
                }
            }
        }
        let zero = index.group_of[v.len() - 1] as usize;
        assert!(index
            .within8(index.group_of[0] as usize, zero, 0.7)
            .is_none());
        // It decides nearly every pair: only those within rounding of the radius are left
        // to the exact distance.
        assert!(
            decided > 20 * undecided,
            "{decided} decided, {undecided} not"
        );
    }

    #[test]
    fn a_window_of_near_duplicates_is_clustered_with_bounded_work() {
        // Two blobs of 1,500 near-duplicates each, 600 copies of one row, and loners.
        let dim = 32;
        let mut v = blob(1500, dim, 0, 1);
        v.extend(blob(1500, dim, 1, 2));
        v.extend(std::iter::repeat_n(blob(1, dim, 2, 3).remove(0), 600));
        v.extend((3..8).map(|c| blob(1, dim, c, 4 + c as u64).remove(0)));
        let points = rows(&v);
        let exact = exact_components(points.view(), 0.3);
        assert_eq!(exact.clusters.len(), 3);
        let some: Vec<bool> = (0..v.len()).map(|i| i % 500 == 0).collect();
        for focus in [None, Some(&some[..])] {
            let c = dbscan(points.view(), 2, 0.3, focus);
            assert_eq!(c.clusters, exact.clusters, "focus {}", focus.is_some());
            assert_eq!(c.noise, exact.noise);
        }
        // Every pair of a cluster is within the radius, so exact answers hold the whole
        // cluster each: 1,500^2 * 2 + 600^2 rows in all. Bounded ones hold at most
        // 2 * MAX_NEIGHBOURS groups per distinct row, and min_points rows for a repeat.
        let exact_work: usize = exact.clusters.iter().map(|c| c.len() * c.len()).sum();
        let groups = 1500 * 2 + 1 + 5;
        let limit = 2 * MAX_NEIGHBOURS * groups + 600 + 2 * 600 + 5;
        let bounded = answered(&points, SignLsh::default(), 0.3);
        assert!(bounded <= limit, "{bounded} > {limit}");
        assert!(limit * 10 < exact_work, "{limit} against {exact_work}");
    }

    #[test]
    fn an_empty_window_has_no_clusters() {
        let c = dbscan(Array2::<f32>::zeros((0, 8)).view(), 2, 0.8, None);
        assert_eq!(c, Clustering::default());
    }

    #[test]
    fn data_that_are_not_unit_vectors_are_searched_exactly() {
        let points = rows(&[vec![3.0, 0.0], vec![3.1, 0.0], vec![0.0, 5.0]]);
        let index = SignLsh::default().from_batch(&points, L2Dist).unwrap();
        let found: Vec<usize> = index
            .within_range(points.row(0), 0.2)
            .unwrap()
            .into_iter()
            .map(|(_, i)| i)
            .collect();
        assert_eq!(found, vec![0, 1]);
    }

    #[test]
    fn other_distances_are_searched_exactly() {
        let points = rows(&[vec![1.0, 0.0], vec![0.0, 1.0], vec![0.6, 0.8]]);
        let index = SignLsh::default()
            .from_batch(&points, linfa_nn::distance::L1Dist)
            .unwrap();
        let mut found: Vec<usize> = index
            .within_range(points.row(2), 0.9)
            .unwrap()
            .into_iter()
            .map(|(_, i)| i)
            .collect();
        found.sort();
        // L1: 0.6 + 0.2 = 0.8 to row 1, but 0.4 + 0.8 = 1.2 to row 0 (which is within 0.9
        // by Euclidean distance: the index must not answer as if it were).
        assert_eq!(found, vec![1, 2]);
    }

    #[test]
    fn a_point_outside_the_batch_is_hashed_and_verified() {
        let v = |a: f32| vec![a.cos(), a.sin(), 0.0, 0.0];
        let points = rows(&(0..200).map(|i| v(i as f32 * 0.031)).collect::<Vec<_>>());
        let index = SignLsh::default().from_batch(&points, L2Dist).unwrap();
        let q = ndarray::arr1(&[1.0f32, 0.0, 0.0, 0.0]);
        let mut got: Vec<usize> = index
            .within_range(q.view(), 0.1)
            .unwrap()
            .into_iter()
            .map(|(_, i)| i)
            .collect();
        got.sort();
        // Exact: angles below 2 asin(0.05) ~ 0.1 rad, i.e. rows 0..=3.
        assert_eq!(got, vec![0, 1, 2, 3]);
    }
}
