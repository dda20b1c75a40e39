//! Optical character recognition for pages without a text layer (scanned PDFs) and for pictures, with
//! PaddleOCR's PP-OCRv6 models run through ONNX Runtime.
//!
//! The models come from the PyPI wheel `rapidocr==3.10.0` (Apache-2.0; `scripts/setup.sh` unpacks them
//! into `ppocr/` under the model folder): a text detector (`PP-OCRv6_det_small.onnx`, DB — Differentiable
//! Binarization, Liao et al. 2020), a text-line recogniser (`PP-OCRv6_rec_small.onnx`, CTC output over ≈18.7k
//! symbols for Chinese, English, Japanese and Latin-script languages, listed in its metadata key
//! `character`) and a 0/180-degree text-line classifier (`ch_ppocr_mobile_v2.0_cls_mobile.onnx`). The
//! models leave pre- and post-processing to the caller; ours follows rapidocr's defaults (its
//! `config.yaml`): the image's longer side at most 2,000 pixels and its shorter side at least 736 for the
//! detector, DB probability threshold 0.3 on a 2×2-dilated map, boxes scoring under 0.5 dropped, boxes
//! grown by area × 1.6 / perimeter ("unclip"), lines recognised at 48 pixels high in batches of 6, greedy
//! CTC decoding, lines under 0.5 confidence dropped.
//!
//! Where ours differs from rapidocr: boxes are axis-aligned rectangles around connected regions of the
//! detector's map (rapidocr fits rotated rectangles to OpenCV contours), since pages are first turned
//! upright as a whole — a page whose text lines stand on end is turned 90° and the classifier's majority
//! vote over its lines decides whether it is then upside down — and lines are put in reading order
//! top to bottom, left to right, with a blank line where the gap between two lines is larger than a line.

use crate::parse::{OcrMode, ParseOptions};
use crate::IngestError;
use image::imageops::{self, FilterType};
use image::RgbImage;
use quarry_core::{Block, Location};
use quarry_onnx::ort::session::Session;
use quarry_onnx::ort::value::Tensor;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The image's longer side is brought down to this many pixels before detection (rapidocr's `max_side_len`).
pub const MAX_SIDE: u32 = 2000;
/// The detector sees the shorter side at least this long (rapidocr's `limit_side_len`, `limit_type: min`).
const DETECT_MIN_SIDE: u32 = 736;
/// A detector pixel is text when its probability exceeds this.
const PIXEL_THRESHOLD: f32 = 0.3;
/// A region whose mean probability is below this is dropped.
const BOX_THRESHOLD: f32 = 0.5;
/// Regions are grown by area × this / perimeter on every side.
const UNCLIP_RATIO: f32 = 1.6;
/// At most this many regions a page.
const MAX_CANDIDATES: usize = 1000;
/// The recogniser's input height, and its narrowest padded width (rapidocr's `rec_img_shape`).
const LINE_HEIGHT: u32 = 48;
const LINE_MIN_WIDTH: u32 = 320;
/// The classifier's input width.
const CLASSIFIER_WIDTH: u32 = 192;
/// Lines go through the recogniser and the classifier this many at a time.
const BATCH: usize = 6;
/// A recognised line with a lower mean character probability is dropped (rapidocr's `text_score`).
const TEXT_SCORE: f32 = 0.5;
/// The classifier's "upside down" counts only above this probability.
const UPSIDE_DOWN_THRESHOLD: f32 = 0.9;

/// The model files OCR needs: ONNX Runtime and the three PP-OCR models.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OcrModels {
    /// `libonnxruntime.so`.
    pub onnx_runtime: PathBuf,
    /// `PP-OCRv6_det_small.onnx`.
    pub detector: PathBuf,
    /// `PP-OCRv6_rec_small.onnx`.
    pub recogniser: PathBuf,
    /// `ch_ppocr_mobile_v2.0_cls_mobile.onnx`.
    pub classifier: PathBuf,
}

/// The detector's file under the model folders; the others sit beside it.
pub const DETECTOR_FILE: &str = "ppocr/PP-OCRv6_det_small.onnx";

impl OcrModels {
    /// The set-up script's files, found through `quarry_core::models::find_model_file`. Errors: a file not
    /// found, with where it was looked for.
    pub fn find() -> Result<Self, String> {
        let detector = quarry_core::models::find_model_file(DETECTOR_FILE)?;
        let dir = detector.parent().map(Path::to_path_buf).unwrap_or_default();
        let models = OcrModels {
            onnx_runtime: quarry_core::models::find_model_file(quarry_onnx::LIBRARY_FILE)?,
            recogniser: dir.join("PP-OCRv6_rec_small.onnx"),
            classifier: dir.join("ch_ppocr_mobile_v2.0_cls_mobile.onnx"),
            detector,
        };
        for file in [&models.recogniser, &models.classifier] {
            if !file.is_file() {
                return Err(format!("OCR model not found at {} (run scripts/setup.sh)", file.display()));
            }
        }
        Ok(models)
    }
}

/// One recognised line of text.
#[derive(Debug, Clone, PartialEq)]
pub struct OcrLine {
    /// The characters read.
    pub text: String,
    /// Mean probability of the line's characters, 0–1.
    pub confidence: f32,
    /// Left, top, right, bottom in pixels of the upright image (after [`OcrPage::rotation`]).
    pub bbox: [u32; 4],
}

/// What OCR read on one image.
#[derive(Debug, Clone, PartialEq)]
pub struct OcrPage {
    /// The lines in reading order, a line break between lines and a blank line between paragraphs.
    pub text: String,
    /// Each line with its confidence and box, in reading order.
    pub lines: Vec<OcrLine>,
    /// Degrees clockwise the image was turned to stand upright: 0, 90, 180 or 270.
    pub rotation: u32,
}

/// The three loaded models and the recogniser's symbols (index 0 is CTC's blank, the last a space).
struct Engine {
    detector: Session,
    recogniser: Session,
    classifier: Session,
    symbols: Vec<String>,
}

impl Engine {
    fn load(models: &OcrModels) -> Result<Engine, String> {
        let environment = quarry_onnx::runtime(&models.onnx_runtime)?;
        let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2).min(4);
        let open = |path: &Path| -> Result<Session, String> {
            if !path.is_file() {
                return Err(format!("OCR model not found at {} (run scripts/setup.sh)", path.display()));
            }
            // No memory pattern: every page has its own size, and ONNX Runtime's planned buffers for
            // each shape stay with the session (`cargo bench --bench ocr`: peak RSS 1,265 MiB with it,
            // 839 MiB without, 2.59 and 2.52 s a page; with the CPU arena off too, 900 MiB and 3.13 s,
            // so the arena stays on, ONNX Runtime's default).
            Session::builder(&environment)
                .and_then(|b| b.with_intra_threads(threads).map_err(Into::into))
                .and_then(|b| b.with_memory_pattern(false).map_err(Into::into))
                .and_then(|mut b| b.commit_from_file(path))
                .map_err(|e| format!("cannot load OCR model {}: {e}", path.display()))
        };
        let detector = open(&models.detector)?;
        let recogniser = open(&models.recogniser)?;
        let classifier = open(&models.classifier)?;
        let listed =
            recogniser.metadata().ok().and_then(|m| m.custom("character")).ok_or_else(|| {
                format!("{} lists no characters (metadata key `character`)", models.recogniser.display())
            })?;
        let mut symbols = vec![String::new()];
        symbols.extend(listed.lines().map(str::to_string));
        symbols.push(" ".to_string());
        Ok(Engine { detector, recogniser, classifier, symbols })
    }
}

/// One engine a process (a parse worker), loaded on first use and kept until [`release_engine`]; the
/// models of the call that loaded it win.
static ENGINE: Mutex<Option<Result<Engine, String>>> = Mutex::new(None);

/// Called before the OCR models are loaded, when set ([`set_before_load`]).
type BeforeLoad = Box<dyn FnMut() -> Result<(), String> + Send>;

/// What runs before each load of the models (a parse worker's wait for its supervisor's permission).
static BEFORE_LOAD: Mutex<Option<BeforeLoad>> = Mutex::new(None);

/// Makes `hook` run before every load of the OCR models in this process — the first page a file needs
/// OCR for, since [`release_engine`] unloads them after each file — and wait for it: a parse worker asks
/// its supervisor whether another worker may read by OCR now (`isolate`'s OCR permits), so a folder of
/// scans does not hold one OCR engine's memory (up to about 1 GiB) in every worker at once. An error from
/// `hook` fails that page's OCR with its message. Replaces an earlier hook.
pub fn set_before_load(hook: BeforeLoad) {
    match BEFORE_LOAD.lock() {
        Ok(mut slot) => *slot = Some(hook),
        Err(poisoned) => *poisoned.into_inner() = Some(hook),
    }
}

/// Unloads the OCR models, if loaded, and with them what ONNX Runtime's arenas grew to while reading
/// pages: a 2,000-pixel page grows a process by about 600 MiB, which the engine otherwise keeps for as
/// long as the process lives. A parse worker calls it after every file (a no-op when no page was read
/// by OCR), so workers going on to other files do not each hold a scan's memory (one worker per core);
/// the next scan loads the models again (docs/evaluation/ingest-and-search.md, 2026-12-04 (b)). Returns whether it was loaded.
pub fn release_engine() -> bool {
    match ENGINE.lock() {
        Ok(mut engine) => engine.take().is_some(),
        Err(poisoned) => poisoned.into_inner().take().is_some(),
    }
}

/// Reads the text on `image` (any size; brought to at most [`MAX_SIDE`] pixels on its longer side).
///
/// Errors: the models or ONNX Runtime cannot be loaded, or a model fails to run — a message naming the
/// file or the step. An image with no text gives an empty [`OcrPage::text`], not an error.
pub fn recognise(models: &OcrModels, image: &RgbImage) -> Result<OcrPage, String> {
    let mut guard = ENGINE.lock().map_err(|_| "OCR engine poisoned by an earlier panic".to_string())?;
    if guard.is_none() {
        if let Some(hook) =
            BEFORE_LOAD.lock().map_err(|_| "OCR hook poisoned by an earlier panic".to_string())?.as_mut()
        {
            hook()?;
        }
    }
    let engine = guard.get_or_insert_with(|| Engine::load(models)).as_mut().map_err(|e| e.clone())?;
    let mut image = fit(image);
    let mut boxes = detect(engine, &image)?;
    let mut rotation = 0;
    // Lines standing on end: the page was scanned or set sideways. Turn it a quarter clockwise; the
    // classifier below decides whether it then stands upside down.
    if stands_on_end(&boxes) {
        image = imageops::rotate90(&image);
        rotation = 90;
        boxes = detect(engine, &image)?;
    }
    if !boxes.is_empty() && upside_down(engine, &image, &boxes)? {
        image = imageops::rotate180(&image);
        rotation = (rotation + 180) % 360;
        let (w, h) = image.dimensions();
        for b in &mut boxes {
            *b = [w - b[2], h - b[3], w - b[0], h - b[1]];
        }
    }
    let crops: Vec<RgbImage> = boxes.iter().map(|b| crop(&image, *b)).collect();
    let recognised = recognise_lines(engine, &crops)?;
    let mut lines: Vec<OcrLine> = boxes
        .iter()
        .zip(recognised)
        .filter(|(_, (text, confidence))| *confidence >= TEXT_SCORE && !text.trim().is_empty())
        .map(|(bbox, (text, confidence))| OcrLine { text: text.trim().to_string(), confidence, bbox: *bbox })
        .collect();
    let text = reading_order(&mut lines);
    Ok(OcrPage { text, lines, rotation })
}

/// Most pages of a multi-page TIFF read; a longer file is read up to here, with a warning.
const MAX_TIFF_PAGES: usize = 500;

/// A picture file (PNG, JPEG, TIFF) read by OCR: one block per page (a multi-page TIFF — a stack of
/// scans or a fax — has a page per image directory; other pictures have page 1), the page count, and
/// warnings saying it was read by OCR. `progress(done, total)` is called after each page of a
/// multi-page TIFF (a sign of life for the worker's supervisor). Errors: OCR is off or its models are not
/// installed ([`IngestError::Unsupported`], saying which), the first page cannot be decoded or would take
/// more than 512 MiB decoded ([`IngestError::Malformed`]), OCR fails ([`IngestError::Crashed`]). A later
/// TIFF page that cannot be decoded is left out with a warning.
pub(crate) fn load_image(
    bytes: &[u8],
    options: &ParseOptions,
    progress: &mut dyn FnMut(u32, u32),
) -> Result<(Vec<Block>, u32, Vec<String>), IngestError> {
    if options.ocr == OcrMode::Off {
        return Err(IngestError::Unsupported("picture (OCR is off)".into()));
    }
    let Some(models) = options.ocr_models.as_ref() else {
        return Err(IngestError::Unsupported(
            "picture (needs OCR; the OCR models are not installed: run scripts/setup.sh)".into(),
        ));
    };
    let mut pages = tiff_pages(bytes);
    let mut warnings = Vec::new();
    if pages.len() > MAX_TIFF_PAGES {
        warnings.push(format!("{} pages; the first {MAX_TIFF_PAGES} were read", pages.len()));
        pages.truncate(MAX_TIFF_PAGES);
    }
    let total = pages.len().max(1) as u32;
    let (mut blocks, mut turned, mut unreadable) = (Vec::new(), Vec::new(), Vec::new());
    for number in 1..=total {
        // Page 1 is the file as it is; page n a copy whose header points at the n-th image directory.
        let picture = match pages.get(number as usize - 1).filter(|_| number > 1) {
            None => decode_picture(bytes),
            Some(&directory) => decode_picture(&tiff_from_directory(bytes, directory)),
        };
        let picture = match picture {
            Ok(picture) => picture,
            Err(error) if number == 1 => return Err(error),
            Err(error) => {
                unreadable.push(format!("p. {number}: {error}"));
                continue;
            }
        };
        let page = recognise(models, &picture).map_err(IngestError::Crashed)?;
        if page.rotation != 0 {
            turned.push(page.rotation);
        }
        if total > 1 {
            progress(number, total);
        }
        if page.text.trim().is_empty() && total > 1 {
            continue;
        }
        let location = Location { page: Some(number), ocr: true, ..Default::default() };
        blocks.push(Block { text: page.text, location });
    }
    warnings.insert(0, if total > 1 { format!("{total} pages read by OCR") } else { "read by OCR".to_string() });
    match (turned.as_slice(), total) {
        ([], _) => {}
        ([rotation], 1) => warnings.push(format!("turned {rotation}° to read it")),
        (pages, _) => warnings.push(format!("{} page(s) turned to read them", pages.len())),
    }
    if let Some(first) = unreadable.first() {
        warnings.push(format!("{} page(s) could not be decoded; first: {first}", unreadable.len()));
    }
    if blocks.is_empty() {
        blocks
            .push(Block { text: String::new(), location: Location { page: Some(1), ocr: true, ..Default::default() } });
    }
    Ok((blocks, total, warnings))
}

/// One picture decoded by the `image` crate (at most 512 MiB decoded), its transparent parts on white.
fn decode_picture(bytes: &[u8]) -> Result<RgbImage, IngestError> {
    let mut reader = image::ImageReader::new(std::io::Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| IngestError::malformed("image", e))?;
    let mut limits = image::Limits::default();
    limits.max_alloc = Some(512 << 20);
    reader.limits(limits);
    Ok(on_white(&reader.decode().map_err(|e| IngestError::malformed("image", e))?))
}

/// The byte offsets of a classic TIFF's image directories — one per page — in file order, from the
/// header's first offset along each directory's link to the next (TIFF 6.0, section 2). Empty when
/// `bytes` is not a classic TIFF (another format, or BigTIFF, whose first page alone is read); the chain
/// stops at an offset outside the file, a directory seen before (a loop) or [`MAX_TIFF_PAGES`] + 1 pages.
fn tiff_pages(bytes: &[u8]) -> Vec<u32> {
    let read_u16 = |at: usize, little: bool| -> Option<u16> {
        let b: [u8; 2] = bytes.get(at..at + 2)?.try_into().ok()?;
        Some(if little { u16::from_le_bytes(b) } else { u16::from_be_bytes(b) })
    };
    let read_u32 = |at: usize, little: bool| -> Option<u32> {
        let b: [u8; 4] = bytes.get(at..at + 4)?.try_into().ok()?;
        Some(if little { u32::from_le_bytes(b) } else { u32::from_be_bytes(b) })
    };
    let little = match bytes.get(..4) {
        Some([b'I', b'I', 42, 0]) => true,
        Some([b'M', b'M', 0, 42]) => false,
        _ => return Vec::new(),
    };
    let mut offsets = Vec::new();
    let mut next = read_u32(4, little).unwrap_or(0);
    while next != 0 && offsets.len() <= MAX_TIFF_PAGES && !offsets.contains(&next) {
        let at = next as usize;
        let Some(entries) = read_u16(at, little) else { break };
        offsets.push(next);
        next = read_u32(at + 2 + 12 * entries as usize, little).unwrap_or(0);
    }
    offsets
}

/// A copy of classic TIFF `bytes` whose header's first-directory offset is `directory`: the same file,
/// read from that page on (every offset in a TIFF is from the file's start, so nothing else moves).
fn tiff_from_directory(bytes: &[u8], directory: u32) -> Vec<u8> {
    let mut copy = bytes.to_vec();
    let little = copy.starts_with(b"II");
    let offset = if little { directory.to_le_bytes() } else { directory.to_be_bytes() };
    copy[4..8].copy_from_slice(&offset);
    copy
}

/// `picture` as RGB, its transparent parts on white: dropping the alpha channel would leave the black
/// that transparent pixels usually hold, and dark text on a transparent PNG (a logo, a screenshot) would
/// vanish into it.
fn on_white(picture: &image::DynamicImage) -> RgbImage {
    if !picture.color().has_alpha() {
        return picture.to_rgb8();
    }
    let rgba = picture.to_rgba8();
    RgbImage::from_fn(rgba.width(), rgba.height(), |x, y| {
        let [r, g, b, a] = rgba.get_pixel(x, y).0;
        let blend = |c: u8| ((c as u32 * a as u32 + 255 * (255 - a as u32)) / 255) as u8;
        image::Rgb([blend(r), blend(g), blend(b)])
    })
}

/// Page `page` (1-based) of a PDF as OCR sees it: rendered by PDFium (the library at `pdfium`), its
/// longer side [`MAX_SIDE`] pixels. For tests and benchmarks. Errors: PDFium or the document cannot be
/// loaded, or the page does not exist.
pub fn render_pdf_page(pdfium: &Path, pdf: &[u8], page: u32) -> Result<RgbImage, String> {
    let mut rendered = None;
    crate::pdf_fallback::render_pages(pdfium, pdf, &[page], MAX_SIDE, &mut |_, image| rendered = Some(image))
        .map_err(|_| format!("PDFium cannot read the document (library {})", pdfium.display()))?;
    rendered.ok_or_else(|| format!("no page {page} to render"))
}

/// The image with its longer side at most [`MAX_SIDE`] pixels.
fn fit(image: &RgbImage) -> RgbImage {
    let (w, h) = image.dimensions();
    let longest = w.max(h);
    if longest <= MAX_SIDE {
        return image.clone();
    }
    let scale = MAX_SIDE as f32 / longest as f32;
    let (nw, nh) = (((w as f32 * scale) as u32).max(1), ((h as f32 * scale) as u32).max(1));
    imageops::resize(image, nw, nh, FilterType::Triangle)
}

/// Writes `image` into `out` (channel-first, BGR as PaddleOCR was trained, scaled to −1…1) at `offset`
/// floats, `stride` floats a row: `out[offset + c * plane + y * stride + x]`.
fn write_normalised(image: &RgbImage, out: &mut [f32], offset: usize, plane: usize, stride: usize) {
    for (x, y, pixel) in image.enumerate_pixels() {
        let at = offset + y as usize * stride + x as usize;
        for (c, value) in [pixel[2], pixel[1], pixel[0]].into_iter().enumerate() {
            out[at + c * plane] = value as f32 / 127.5 - 1.0;
        }
    }
}

/// Text regions of `image` as axis-aligned boxes (left, top, right, bottom) in its pixels.
fn detect(engine: &mut Engine, image: &RgbImage) -> Result<Vec<[u32; 4]>, String> {
    let (w, h) = image.dimensions();
    let shortest = w.min(h).max(1);
    let scale = if shortest < DETECT_MIN_SIDE { DETECT_MIN_SIDE as f32 / shortest as f32 } else { 1.0 };
    let round32 = |v: f32| (((v / 32.0).round() as u32) * 32).max(32);
    let (dw, dh) = (round32(w as f32 * scale), round32(h as f32 * scale));
    let resized = imageops::resize(image, dw, dh, FilterType::Triangle);
    let plane = (dw * dh) as usize;
    let mut input = vec![0f32; 3 * plane];
    write_normalised(&resized, &mut input, 0, plane, dw as usize);
    let shape = [1usize, 3, dh as usize, dw as usize];
    let (regions, mw, mh) = infer(&mut engine.detector, shape, input, "text detection", |shape, probabilities| {
        let (mh, mw) = (shape[shape.len() - 2] as usize, shape[shape.len() - 1] as usize);
        if probabilities.len() < mh * mw {
            return Err(format!("OCR text detection output of shape {shape:?}"));
        }
        Ok((regions(&probabilities[..mh * mw], mw, mh), mw, mh))
    })??;
    let (sx, sy) = (w as f32 / mw as f32, h as f32 / mh as f32);
    Ok(regions
        .into_iter()
        .map(|[l, t, r, b]| {
            [
                ((l * sx).round().max(0.0) as u32).min(w - 1),
                ((t * sy).round().max(0.0) as u32).min(h - 1),
                ((r * sx).round().max(0.0) as u32).min(w),
                ((b * sy).round().max(0.0) as u32).min(h),
            ]
        })
        .filter(|[l, t, r, b]| r > l && b > t)
        .collect())
}

/// DB post-processing over a `width` × `height` probability map: connected regions (8-neighbourhood) of
/// the thresholded, 2×2-dilated map, kept when their box's mean probability reaches [`BOX_THRESHOLD`] and
/// their shorter side 3 pixels, grown by area × [`UNCLIP_RATIO`] / perimeter. Boxes in map pixels
/// (left, top, right, bottom), in no particular order.
fn regions(probabilities: &[f32], width: usize, height: usize) -> Vec<[f32; 4]> {
    // Dilation with a 2×2 kernel anchored at its centre: a pixel is on when it or its left, upper or
    // upper-left neighbour is above the threshold (OpenCV's `dilate` as rapidocr calls it).
    let above = |x: usize, y: usize| probabilities[y * width + x] > PIXEL_THRESHOLD;
    let mut mask = vec![false; width * height];
    for y in 0..height {
        for x in 0..width {
            mask[y * width + x] = above(x, y)
                || (x > 0 && above(x - 1, y))
                || (y > 0 && above(x, y - 1))
                || (x > 0 && y > 0 && above(x - 1, y - 1));
        }
    }
    let mut seen = vec![false; width * height];
    let mut boxes = Vec::new();
    let mut stack = Vec::new();
    for start in 0..width * height {
        if !mask[start] || seen[start] {
            continue;
        }
        seen[start] = true;
        stack.push(start);
        let (mut left, mut top, mut right, mut bottom) = (usize::MAX, usize::MAX, 0, 0);
        while let Some(at) = stack.pop() {
            let (x, y) = (at % width, at / width);
            left = left.min(x);
            right = right.max(x);
            top = top.min(y);
            bottom = bottom.max(y);
            for dy in [-1i64, 0, 1] {
                for dx in [-1i64, 0, 1] {
                    let (nx, ny) = (x as i64 + dx, y as i64 + dy);
                    if nx < 0 || ny < 0 || nx >= width as i64 || ny >= height as i64 {
                        continue;
                    }
                    let next = ny as usize * width + nx as usize;
                    if mask[next] && !seen[next] {
                        seen[next] = true;
                        stack.push(next);
                    }
                }
            }
        }
        let (w, h) = ((right - left) as f32, (bottom - top) as f32);
        if w.min(h) < 3.0 {
            continue;
        }
        let mut sum = 0f64;
        for y in top..=bottom {
            sum += probabilities[y * width + left..=y * width + right].iter().map(|&p| p as f64).sum::<f64>();
        }
        let score = sum / ((right - left + 1) * (bottom - top + 1)) as f64;
        if (score as f32) < BOX_THRESHOLD {
            continue;
        }
        let grow = w * h * UNCLIP_RATIO / (2.0 * (w + h));
        if (w + 2.0 * grow).min(h + 2.0 * grow) < 5.0 {
            continue;
        }
        boxes.push([left as f32 - grow, top as f32 - grow, right as f32 + 1.0 + grow, bottom as f32 + 1.0 + grow]);
        if boxes.len() == MAX_CANDIDATES {
            break;
        }
    }
    boxes
}

/// True when most of the text area lies in boxes at least 1.5 times taller than wide: lines on end.
fn stands_on_end(boxes: &[[u32; 4]]) -> bool {
    let (mut tall, mut wide) = (0u64, 0u64);
    for [l, t, r, b] in boxes {
        let (w, h) = ((r - l) as u64, (b - t) as u64);
        if 2 * h >= 3 * w {
            tall += w * h;
        } else if 2 * w >= 3 * h {
            wide += w * h;
        }
    }
    tall > wide
}

fn crop(image: &RgbImage, [l, t, r, b]: [u32; 4]) -> RgbImage {
    let line = imageops::crop_imm(image, l, t, r - l, b - t).to_image();
    // A single line standing on end (a vertical label): read it turned a quarter anticlockwise, as
    // rapidocr does.
    if line.height() * 2 >= line.width() * 3 {
        imageops::rotate270(&line)
    } else {
        line
    }
}

/// `line` scaled to [`LINE_HEIGHT`] pixels high and at most `width` wide, written normalised into slot
/// `index` of a `[n, 3, LINE_HEIGHT, width]` batch (the rest of the row stays 0, the padding).
fn write_line(line: &RgbImage, width: u32, batch: &mut [f32], index: usize) {
    let ratio = line.width() as f32 / line.height().max(1) as f32;
    let scaled = ((LINE_HEIGHT as f32 * ratio).ceil() as u32).clamp(1, width);
    let resized = imageops::resize(line, scaled, LINE_HEIGHT, FilterType::Triangle);
    let plane = (LINE_HEIGHT * width) as usize;
    write_normalised(&resized, batch, index * 3 * plane, plane, width as usize);
}

/// Line images as one `[n, 3, LINE_HEIGHT, width]` input (see [`write_line`]), with its shape.
fn line_batch<'a>(lines: impl ExactSizeIterator<Item = &'a RgbImage>, width: u32) -> ([usize; 4], Vec<f32>) {
    let shape = [lines.len(), 3, LINE_HEIGHT as usize, width as usize];
    let mut input = vec![0f32; shape.iter().product()];
    for (slot, line) in lines.enumerate() {
        write_line(line, width, &mut input, slot);
    }
    (shape, input)
}

/// Runs `session` on one float tensor of `shape` and hands its first output (shape, values) to `read`,
/// which sees ONNX Runtime's buffer without a copy. Errors name the `step` ("text detection", …).
fn infer<R>(
    session: &mut Session,
    shape: [usize; 4],
    input: Vec<f32>,
    step: &str,
    read: impl FnOnce(&[i64], &[f32]) -> R,
) -> Result<R, String> {
    let tensor = Tensor::from_array((shape, input)).map_err(|e| format!("OCR {step} input: {e}"))?;
    let outputs = session.run(quarry_onnx::ort::inputs![tensor]).map_err(|e| format!("OCR {step} failed: {e}"))?;
    let (shape, values) = outputs[0].try_extract_tensor::<f32>().map_err(|e| format!("OCR {step} output: {e}"))?;
    Ok(read(shape, values))
}

/// True when the classifier calls more of the page's lines upside down than upright.
fn upside_down(engine: &mut Engine, image: &RgbImage, boxes: &[[u32; 4]]) -> Result<bool, String> {
    let (mut down, mut up) = (0usize, 0usize);
    let crops: Vec<RgbImage> = boxes.iter().map(|b| crop(image, *b)).collect();
    for batch in crops.chunks(BATCH) {
        let (shape, input) = line_batch(batch.iter(), CLASSIFIER_WIDTH);
        infer(&mut engine.classifier, shape, input, "line orientation", |_, scores| {
            for pair in scores.chunks(2).take(batch.len()) {
                if pair.len() == 2 && pair[1] > pair[0] && pair[1] >= UPSIDE_DOWN_THRESHOLD {
                    down += 1;
                } else if pair.len() == 2 && pair[0] >= pair[1] {
                    up += 1;
                }
            }
        })?;
    }
    Ok(down > up)
}

/// (text, mean character probability) for each line image, in the order given.
fn recognise_lines(engine: &mut Engine, lines: &[RgbImage]) -> Result<Vec<(String, f32)>, String> {
    let ratio = |l: &RgbImage| l.width() as f32 / l.height().max(1) as f32;
    // Lines of similar shape go together: a batch is padded to its widest.
    let mut order: Vec<usize> = (0..lines.len()).collect();
    order.sort_by(|&a, &b| ratio(&lines[a]).total_cmp(&ratio(&lines[b])));
    let mut results = vec![(String::new(), 0f32); lines.len()];
    for batch in order.chunks(BATCH) {
        let widest = batch.iter().map(|&i| ratio(&lines[i])).fold(LINE_MIN_WIDTH as f32 / LINE_HEIGHT as f32, f32::max);
        let width = (LINE_HEIGHT as f32 * widest) as u32;
        let (shape, input) = line_batch(batch.iter().map(|&i| &lines[i]), width);
        let symbols = &engine.symbols;
        infer(&mut engine.recogniser, shape, input, "text recognition", |shape, probabilities| {
            let (steps, classes) = (shape[1] as usize, shape[2] as usize);
            for (slot, &i) in batch.iter().enumerate() {
                let rows = probabilities.get(slot * steps * classes..(slot + 1) * steps * classes).unwrap_or(&[]);
                results[i] = ctc_decode(rows, classes, symbols);
            }
        })?;
    }
    Ok(results)
}

/// Greedy CTC decoding of `steps × classes` probabilities: the most likely class at each step, repeats
/// merged, blanks (class 0) dropped; the confidence is the mean probability of the symbols kept.
fn ctc_decode(probabilities: &[f32], classes: usize, symbols: &[String]) -> (String, f32) {
    let mut text = String::new();
    let (mut sum, mut kept) = (0f32, 0usize);
    let mut previous = 0usize;
    for step in probabilities.chunks(classes) {
        let (best, p) = step
            .iter()
            .enumerate()
            .fold((0usize, f32::MIN), |(bi, bp), (i, &p)| if p > bp { (i, p) } else { (bi, bp) });
        if best != 0 && best != previous {
            if let Some(symbol) = symbols.get(best) {
                text.push_str(symbol);
                sum += p;
                kept += 1;
            }
        }
        previous = best;
    }
    let confidence = if kept == 0 { 0.0 } else { sum / kept as f32 };
    (text, confidence)
}

/// Sorts `lines` into reading order and joins them: boxes whose vertical centres fall within one line's
/// height are one line (left to right, a space between), lines top to bottom, a blank line where the gap
/// to the next line exceeds the line's height.
fn reading_order(lines: &mut Vec<OcrLine>) -> String {
    lines.sort_by_key(|l| (l.bbox[1], l.bbox[0]));
    let mut rows: Vec<Vec<OcrLine>> = Vec::new();
    for line in lines.drain(..) {
        let centre = (line.bbox[1] + line.bbox[3]) / 2;
        match rows.last_mut() {
            Some(row) if centre >= row[0].bbox[1] && centre <= row[0].bbox[3] => row.push(line),
            _ => rows.push(vec![line]),
        }
    }
    let mut text = String::new();
    let mut previous_bottom: Option<(u32, u32)> = None;
    for row in &mut rows {
        row.sort_by_key(|l| l.bbox[0]);
        let top = row.iter().map(|l| l.bbox[1]).min().unwrap_or(0);
        let bottom = row.iter().map(|l| l.bbox[3]).max().unwrap_or(0);
        if let Some((last_bottom, last_height)) = previous_bottom {
            text.push('\n');
            if top > last_bottom + last_height {
                text.push('\n');
            }
        }
        let words: Vec<&str> = row.iter().map(|l| l.text.as_str()).collect();
        text.push_str(&words.join(" "));
        previous_bottom = Some((bottom, bottom - top));
    }
    lines.extend(rows.into_iter().flatten());
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A parse worker unloads the models after each file (`release_engine`, freeing what the page grew
    /// ONNX Runtime's arenas by); the next scan loads them again and reads the same text. (The only
    /// test of this binary that runs OCR, so no other test loads or unloads the engine meanwhile.)
    #[test]
    fn the_engine_is_unloaded_after_a_file_and_loaded_again_by_the_next_scan() {
        let models = OcrModels::find().expect("OCR models (run scripts/setup.sh)");
        let pdfium = crate::ParseOptions::default().pdfium_library.expect("PDFium (run scripts/setup.sh)");
        let scan = crate::test_files::shared_file("B_documents/docling_tests/ocr/sources/ocr_test_rotated_180.pdf");
        let image = render_pdf_page(&pdfium, &std::fs::read(scan).unwrap(), 1).unwrap();
        release_engine();
        let first = recognise(&models, &image).unwrap();
        assert!(first.text.contains("Docling"), "{:?}", first.text);
        assert!(release_engine(), "the first page loaded the models");
        assert!(!release_engine(), "nothing is left to unload");
        let again = recognise(&models, &image).unwrap();
        assert_eq!(again, first, "reloaded models read the page the same way");
        assert!(release_engine());
    }

    #[test]
    fn transparent_pixels_become_white_not_black() {
        let mut picture = image::RgbaImage::from_pixel(2, 1, image::Rgba([0, 0, 0, 0]));
        picture.put_pixel(1, 0, image::Rgba([10, 20, 30, 255]));
        let rgb = on_white(&image::DynamicImage::ImageRgba8(picture));
        assert_eq!(rgb.get_pixel(0, 0).0, [255, 255, 255], "transparent: white");
        assert_eq!(rgb.get_pixel(1, 0).0, [10, 20, 30], "opaque: as it is");
    }

    #[test]
    fn ctc_merges_repeats_and_drops_blanks() {
        let symbols: Vec<String> = ["", "a", "b", " "].iter().map(|s| s.to_string()).collect();
        // Steps: a a blank a b b space → "aab "
        let steps = [1, 1, 0, 1, 2, 2, 3];
        let mut probabilities = Vec::new();
        for s in steps {
            let mut row = vec![0.0f32; 4];
            row[s] = 0.9;
            probabilities.extend(row);
        }
        let (text, confidence) = ctc_decode(&probabilities, 4, &symbols);
        assert_eq!(text, "aab ");
        assert!((confidence - 0.9).abs() < 1e-6);
    }

    #[test]
    fn regions_find_a_bar_and_grow_it() {
        // A 10 × 40 bar of high probability in a 64 × 32 map.
        let (w, h) = (64, 32);
        let mut map = vec![0.0f32; w * h];
        for y in 10..20 {
            for x in 10..50 {
                map[y * w + x] = 0.9;
            }
        }
        let boxes = regions(&map, w, h);
        assert_eq!(boxes.len(), 1);
        let [l, t, r, b] = boxes[0];
        assert!(l < 10.0 && t < 10.0 && r > 50.0 && b > 20.0, "grown on every side: {:?}", boxes[0]);
    }

    #[test]
    fn lines_on_end_are_told_from_lines_across() {
        assert!(stands_on_end(&[[0, 0, 20, 300], [30, 0, 50, 280]]));
        assert!(!stands_on_end(&[[0, 0, 300, 20], [0, 30, 280, 50]]));
    }

    #[test]
    fn reading_order_joins_a_row_and_separates_paragraphs() {
        let line = |text: &str, bbox: [u32; 4]| OcrLine { text: text.into(), confidence: 0.9, bbox };
        let mut lines = vec![
            line("world", [120, 10, 200, 30]),
            line("Hello", [10, 12, 100, 32]),
            line("next line", [10, 35, 200, 55]),
            line("new paragraph", [10, 120, 200, 140]),
        ];
        assert_eq!(reading_order(&mut lines), "Hello world\nnext line\n\nnew paragraph");
        assert_eq!(lines.len(), 4);
    }
}
