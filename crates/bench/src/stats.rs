//! The few statistics the benchmark protocol needs: the median of repeated
//! runs (robust to the odd slow run on a shared machine) and the geometric
//! mean of ratios over the suite (the usual mean of normalised times, as in
//! SPEC and the seed papers).

/// Median of `xs`; the mean of the two middle values for an even count.
/// `None` for an empty slice or one holding NaN.
pub fn median(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() || xs.iter().any(|x| x.is_nan()) {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    })
}

/// Geometric mean of positive values; `None` if empty or any is not positive.
pub fn geomean(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() || xs.iter().any(|&x| x.is_nan() || x <= 0.0) {
        return None;
    }
    let log_sum: f64 = xs.iter().map(|x| x.ln()).sum();
    Some((log_sum / xs.len() as f64).exp())
}

/// Spread of repeated runs: (max - min) / median, for the noise column.
pub fn spread(xs: &[f64]) -> Option<f64> {
    let m = median(xs)?;
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (m > 0.0).then(|| (hi - lo) / m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[7.0]), Some(7.0));
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[1.0, f64::NAN]), None);
    }

    #[test]
    fn geomean_of_ratios() {
        assert_eq!(geomean(&[2.0, 8.0]), Some(4.0));
        assert_eq!(geomean(&[1.0, 1.0, 1.0]), Some(1.0));
        assert_eq!(geomean(&[]), None);
        assert_eq!(geomean(&[1.0, 0.0]), None);
        let g = geomean(&[1.0, 10.0, 100.0]).unwrap();
        assert!((g - 10.0).abs() < 1e-12);
    }

    #[test]
    fn spread_is_range_over_median() {
        assert_eq!(spread(&[1.0, 2.0, 3.0]), Some(1.0));
        assert_eq!(spread(&[2.0, 2.0]), Some(0.0));
        assert_eq!(spread(&[]), None);
    }
}
