//! The float8 E4M3FN encoding of the quantized forward against the format's definition: every
//! code's value encodes to that code, every midpoint between neighbours to the even one, and
//! values beside a midpoint to the nearer code.

use rmsnorm_wasm::quant_bits::e4m3;

/// The value of code `b`: sign, 4 exponent bits (bias 7), 3 mantissa bits; NaN for 0x7f/0xff.
fn value(b: u8) -> f64 {
    if b & 0x7f == 0x7f {
        return f64::NAN;
    }
    let s = if b & 0x80 != 0 { -1.0 } else { 1.0 };
    let (e, m) = (((b >> 3) & 15) as i32, (b & 7) as f64);
    if e == 0 {
        s * m * 2f64.powi(-9)
    } else {
        s * (8.0 + m) * 2f64.powi(e - 10)
    }
}

#[test]
fn every_code_and_midpoint() {
    for b in 0u8..=255 {
        let v = value(b);
        if v.is_nan() {
            assert_eq!(e4m3(v as f32), 0x7f);
            continue;
        }
        assert_eq!(e4m3(v as f32), b, "code {b:#x}");
        if b & 0x7f < 0x7e {
            let next = value(b + 1);
            let mid = (v + next) / 2.0;
            let even = if b & 1 == 0 { b } else { b + 1 };
            assert_eq!(e4m3(mid as f32), even, "midpoint above {b:#x}");
            let below = (mid as f32).next_down_toward_zero();
            let above = (mid as f32).next_up_away_from_zero();
            assert_eq!(e4m3(below), b, "below the midpoint above {b:#x}");
            assert_eq!(e4m3(above), b + 1, "above the midpoint above {b:#x}");
        }
    }
    assert_eq!(e4m3(f32::NAN), 0x7f);
    assert_eq!(e4m3(-f32::NAN), 0x7f);
}

/// Neighbours of a float32 toward and away from zero (its sign kept).
trait Step {
    fn next_down_toward_zero(self) -> f32;
    fn next_up_away_from_zero(self) -> f32;
}

impl Step for f32 {
    fn next_down_toward_zero(self) -> f32 {
        f32::from_bits(self.to_bits() - 1)
    }
    fn next_up_away_from_zero(self) -> f32 {
        f32::from_bits(self.to_bits() + 1)
    }
}
