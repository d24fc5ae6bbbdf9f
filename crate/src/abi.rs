//! What crosses the wasm boundary, defined once: status codes, storage types with their facts,
//! the parameter block of a call, the gate of a gated RMSNorm, and each operation's operand
//! order. `scripts/gen-abi.mjs` writes `ts/generated/abi.ts` from this file (the names, values, layouts
//! and doc lines below), and a test keeps the two equal, so the TypeScript side never copies a
//! code, an offset or an order by hand.
//!
//! A hash of this file's bytes (`bindings::abi_hash`) is compiled into the module and written
//! into the TypeScript copy: the JavaScript refuses a module built from another version of this file
//! (a stale build, or a cached `.wasm` served with newer scripts) instead of misreading it.
//!
//! Keep the shapes the generator reads: a `///` line of text, then `Name = value,` in an enum;
//! `pub const NAME: u32 = value;`; in the `#[repr(C)]` struct, a `///` line then `pub name:
//! u32,` or `f32,`; in [`DTYPES`], `DtypeFacts { field: value, ... }` with string, bool or
//! integer values.

/// What a kernel entry point returns: 0, or which of its bounds checks failed.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// success
    Ok = 0,
    /// dim is zero
    Dim = 1,
    /// a required address is 0
    Null = 2,
    /// an address is not a multiple of its element size
    Align = 3,
    /// a range runs past the end of wasm memory, or its size overflows
    Bounds = 4,
    /// a row range is reversed, past the end, or a pool shard does not start on a dweight block
    Shard = 5,
    /// stat (the elements rstd is estimated from) is 0 or more than dim
    Stat = 6,
    /// an unknown storage type code in dtypes, a float32 code where a half one is needed, or a quantized output the call cannot have
    Dtype = 7,
    /// an unknown gate code, or a gate without its operand
    Gate = 8,
    /// the memory could not grow for the scratch of a long row
    Memory = 9,
}

/// Storage type codes: the low two bits ([`DTYPE_MASK`]) of a call's `dtypes` word (the
/// activations'), or a quantized output's in `out_dtype`. Named as the API names them.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum Dtype {
    /// IEEE binary32
    Float32 = 0,
    /// IEEE binary16, as u16 bit patterns
    Float16 = 1,
    /// bfloat16 (the top half of a float32), as u16 bit patterns
    Bfloat16 = 2,
    /// signed 8-bit integers: a quantized output only, with a scale
    Int8 = 3,
    /// OCP float8 E4M3FN (no infinities, largest 448), as u8 bit patterns: a quantized output only, with a scale
    Float8_e4m3 = 4,
}

/// Where half-precision results are rounded (the castingMode option): each mode's name and its
/// code, which the TypeScript side maps to the [`LLAMA`] flag it sets (the kernels read the flag).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Casting {
    /// everything in float32, one rounding at the end (the default)
    None = 0,
    /// Hugging Face's LlamaRMSNorm: x·rstd rounded to the activations' type before the gain (the LLAMA flag)
    Llama = 1,
    /// Gemma's: everything in float32, one rounding at the end (as none; the 1 + weight is the offset option)
    Gemma = 2,
}

/// The bits of `dtypes` that hold the activations' [`Dtype`] (one with `qmax` 0).
pub const DTYPE_MASK: u32 = 3;
/// The `llama` casting mode: `x·rstd` is rounded to the activations' type before the gain.
pub const LLAMA: u32 = 4;
/// With `LLAMA`: the weight has the activations' half type, so the backward rounds each weight-gradient term to it as autograd does.
pub const LLAMA_W: u32 = 8;

/// Floats per column at the start of a backward's workspace: the f64 sum of its finished
/// dweight blocks (then the open block of a span, or a pool job's block partials).
pub const DG_SUM_FLOATS: u32 = 2;

/// What one storage type is, beside its code.
#[derive(Clone, Copy, Debug)]
pub struct DtypeFacts {
    /// Its name in the API (`'float32'`).
    pub name: &'static str,
    /// Bytes per element.
    pub bytes: usize,
    /// Whether it is one of the half types the public conversions (`halfToFloat32`,
    /// `float32ToHalf`) take, two bytes held as a Uint16Array of bits. (What the `llama` mode
    /// rounds to is every storage type but f32: `Elem::F32`.)
    pub half: bool,
    /// The typed array that holds its elements (a half type's bit patterns).
    pub array: &'static str,
    /// JavaScript's own typed array of this type where the engine may have one
    /// (`Float16Array`), taken in place of `array` and seen through its bits; `""` for none.
    pub js_array: &'static str,
    /// NumPy's little-endian `descr`, `""` where NumPy has no such type.
    pub npy: &'static str,
    /// The safetensors header's `dtype`.
    pub safetensors: &'static str,
    /// A quantized type's largest magnitude (a row's scale is max|y| / qmax); 0 for a type
    /// the activations may have. Quantized types are outputs of the forward only.
    pub qmax: u32,
}

/// The storage types' facts, by [`Dtype`] code: the one table every check, message, placement
/// rule, pool word and file layout reads.
pub const DTYPES: [DtypeFacts; 5] = [
    DtypeFacts {
        name: "float32",
        bytes: 4,
        half: false,
        array: "Float32Array",
        js_array: "",
        npy: "<f4",
        safetensors: "F32",
        qmax: 0,
    },
    DtypeFacts {
        name: "float16",
        bytes: 2,
        half: true,
        array: "Uint16Array",
        js_array: "Float16Array",
        npy: "<f2",
        safetensors: "F16",
        qmax: 0,
    },
    DtypeFacts {
        name: "bfloat16",
        bytes: 2,
        half: true,
        array: "Uint16Array",
        js_array: "",
        npy: "",
        safetensors: "BF16",
        qmax: 0,
    },
    DtypeFacts {
        name: "int8",
        bytes: 1,
        half: false,
        array: "Int8Array",
        js_array: "",
        npy: "|i1",
        safetensors: "I8",
        qmax: 127,
    },
    DtypeFacts {
        name: "float8_e4m3",
        bytes: 1,
        half: false,
        array: "Uint8Array",
        js_array: "",
        npy: "",
        safetensors: "F8_E4M3",
        qmax: 448,
    },
];

/// How many rows of [`DTYPES`] are storage types (a `qmax` of 0): the activations' and weights'.
pub const fn storage_dtypes() -> usize {
    let (mut i, mut n) = (0, 0);
    while i < DTYPES.len() {
        if DTYPES[i].qmax == 0 {
            n += 1;
        }
        i += 1;
    }
    n
}

/// Where a gated RMSNorm's gate `silu(z)` multiplies (Qwen3-Next's and Mamba-2's RMSNormGated).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gate {
    /// no gate
    None = 0,
    /// after the norm: y = rmsnorm(x) · w · silu(z) (Qwen3-Next; Mamba-2 with norm_before_gate)
    After = 1,
    /// before the norm: y = rmsnorm(x · silu(z)) · w (Mamba-2's default)
    Before = 2,
}

impl Gate {
    /// The gate of a parameter block's code, or None for a code no variant has.
    pub fn of(code: u32) -> Option<Gate> {
        [Gate::None, Gate::After, Gate::Before]
            .into_iter()
            .find(|g| *g as u32 == code)
    }
}

/// The scalars and flags of one kernel call: a block of this layout in wasm memory, written by
/// the caller once per call (the pool: into its control block) and read by every entry point,
/// which takes its address.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// row length (elements)
    pub dim: u32,
    /// elements of each row its rstd is estimated from (pRMSNorm): 1 to dim
    pub stat: u32,
    /// added to mean(x²) inside the square root
    pub eps: f32,
    /// added to the weight: the gain is offset + weight (Gemma: 1)
    pub offset: f32,
    /// the matrix operands' storage (a Dtype code) and the LLAMA and LLAMA_W flags
    pub dtypes: u32,
    /// where a gate applies (a Gate code)
    pub gate: u32,
    /// the forward's output storage when it is quantized (a Dtype code with a qmax), else 0: the activations' own
    pub out_dtype: u32,
    /// a quantized output's scale for every row (q = y / quant_scale), or 0: one scale per row, max|y| / qmax, written to the row scales
    pub quant_scale: f32,
}

impl Params {
    /// Plain RMSNorm over rows of `dim`: every other field at the value that changes nothing
    /// (the kernels' direct callers: the benchmark kernels, the tests).
    pub const fn plain(dim: u32, eps: f32) -> Params {
        Params {
            dim,
            stat: dim,
            eps,
            offset: 0.0,
            dtypes: 0,
            gate: Gate::None as u32,
            out_dtype: 0,
            quant_scale: 0.0,
        }
    }
}

/// How much memory an operand spans from its address, for the entry points' bounds checks.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extent {
    /// rows × dim elements of the activations' storage (a quantized output: one byte each)
    Matrix = 0,
    /// one f32 per row
    PerRow = 1,
    /// dim f32: one row for every row (a half weight is widened to f32 before the kernel sees it)
    Row = 2,
}

/// Each operation's operands, once: their places in the address array its entry points take
/// (and the workspace's, after them), each with its extent and the field the kernel's view of a
/// call gives it (`kernel::Forward`, `kernel::Backward`). A table is a macro that hands its rows
/// to `$then!` (a workspace, in brackets after the names), so that the enum here and the
/// kernel's view are both made of it: a new operand is one row.
#[macro_export]
macro_rules! forward_operands {
    ($then:ident) => {
        $then! {
            /// The forward's operands: their places in the address array its entry point takes.
            Forward, ForwardOperand;
            /// the input, rows × dim
            X = 0, Matrix, x: *const A;
            /// the residual of a fused add, rows × dim, or 0
            Residual = 1, Matrix, res: *const A;
            /// the gain, dim f32, or 0
            Weight = 2, Row, g: *const f32;
            /// the output, rows × dim
            Y = 3, Matrix, y: *mut A;
            /// where h = x + residual goes, rows × dim, or 0
            H = 4, Matrix, h: *mut A;
            /// one rstd per row, f32, or 0
            Rstd = 5, PerRow, rstd: *mut f32;
            /// the gate's input z, rows × dim, or 0
            Z = 6, Matrix, z: *const A;
            /// a quantized output's scale of each row, rows f32, or 0 (with a static quant_scale)
            RowScales = 7, PerRow, row_scales: *mut f32;
        }
    };
}

/// The backward's table (see [`forward_operands`]).
#[macro_export]
macro_rules! backward_operands {
    ($then:ident) => {
        $then! {
            /// The backward's operands and workspace: their places in the address array its entry points take.
            Backward, BackwardOperand, [
                /// the workspace, after the operands: the f64 sum of the finished dweight blocks, then the open block (a span) or the block partials (a pool job)
                Work = 9
            ];
            /// the upstream gradient, rows × dim
            Dy = 0, Matrix, dy: *const A;
            /// the forward's input (its h with a fused add), rows × dim
            X = 1, Matrix, x: *const A;
            /// the gain, dim f32, or 0
            Weight = 2, Row, g: *const f32;
            /// the forward's rstd, rows f32, or 0 to recompute it
            Rstd = 3, PerRow, rstd: *const f32;
            /// the gradient on a fused add's h, added to dx, rows × dim, or 0
            Dresidual = 4, Matrix, dh: *const A;
            /// the input gradient, rows × dim
            Dx = 5, Matrix, dx: *mut A;
            /// the weight gradient, dim f32, or 0
            Dweight = 6, Row, dg: *mut f32;
            /// the gate's input z, rows × dim, or 0
            Z = 7, Matrix, z: *const A;
            /// the gate's gradient, rows × dim, or 0
            Dz = 8, Matrix, dz: *mut A;
        }
    };
}

/// An operation's operand enum from its table: the places, the count of address words (the
/// workspace's included) and each operand's extent in order.
macro_rules! operand_enum {
    (
        $(#[$doc:meta])* $view:ident, $name:ident $(, [$(#[$wdoc:meta])* $wv:ident = $wn:literal])?;
        $($(#[$vdoc:meta])* $v:ident = $n:literal, $e:ident, $f:ident: $t:ty;)*
    ) => {
        $(#[$doc])*
        #[repr(u32)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum $name {
            $($(#[$vdoc])* $v = $n,)*
            $($(#[$wdoc])* $wv = $wn,)?
        }

        impl $name {
            /// Address words of its entry points: one per operand (then the workspace).
            pub const COUNT: usize = [$($n,)* $($wn)?].len();
            /// Each operand's extent, in operand order: the entry point checks each by it.
            pub const EXTENTS: [Extent; [$($n),*].len()] = [$(Extent::$e),*];
        }
    };
}

/// Every operation's operand table: what makes each operand enum here and each view of a call
/// in kernel/args.rs (a new operation's table is named here).
#[macro_export]
macro_rules! each_operation {
    ($then:ident) => {
        $crate::forward_operands!($then);
        $crate::backward_operands!($then);
    };
}

each_operation!(operand_enum);
