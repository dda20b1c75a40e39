use serde::{Deserialize, Serialize};
use std::fmt;

/// A document format Quarry can read, as decided from the file's bytes (magic numbers and container
/// contents), never from its extension alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// PDF (text layer; pages without one by OCR).
    Pdf,
    /// Word 2007+ (`.docx`).
    Docx,
    /// Excel 2007+ workbook (`.xlsx`).
    Xlsx,
    /// Excel 2007+ workbook with macros (`.xlsm`; the macros are not read).
    Xlsm,
    /// Excel binary workbook (`.xlsb`).
    Xlsb,
    /// Legacy Excel 97-2003 (BIFF8 inside an OLE2 compound file).
    Xls,
    /// OpenDocument spreadsheet (`.ods`).
    Ods,
    /// A ZIP archive; each member is a document of its own.
    Zip,
    /// Plain text.
    Text,
    /// Markdown; headings give the heading path.
    Markdown,
    /// Comma- or tab-separated values.
    Csv,
    /// An HTML page, reduced to its readable text.
    Html,
    /// JSON, read as text.
    Json,
    /// An e-mail message (RFC 5322/MIME, `.eml`); its attachments are documents of their own.
    Eml,
    /// An Outlook message (`.msg`, an OLE2 compound file of MAPI properties); attachments likewise.
    Msg,
    /// A mailbox (`mbox`: Thunderbird folders, Google Takeout exports): a container, each message a
    /// document of its own, as ZIP members are.
    Mbox,
    /// A PowerPoint presentation (Office Open XML, `.pptx`): one block per slide.
    Pptx,
    /// An OpenDocument text (`.odt`).
    Odt,
    /// An EPUB e-book: one block per chapter.
    Epub,
    /// A picture (PNG, JPEG, TIFF): its text is read by OCR.
    Image,
    /// A Rich Text Format document (`.rtf`), in any code page.
    Rtf,
    /// An OpenDocument presentation (`.odp`): one block per slide.
    Odp,
}

impl Format {
    /// The short lowercase name used in reports and the CLI (`pdf`, `docx`, `xlsx`, …).
    pub fn name(self) -> &'static str {
        match self {
            Format::Pdf => "pdf",
            Format::Docx => "docx",
            Format::Xlsx => "xlsx",
            Format::Xlsm => "xlsm",
            Format::Xlsb => "xlsb",
            Format::Xls => "xls",
            Format::Ods => "ods",
            Format::Zip => "zip",
            Format::Text => "text",
            Format::Markdown => "markdown",
            Format::Csv => "csv",
            Format::Html => "html",
            Format::Json => "json",
            Format::Eml => "eml",
            Format::Msg => "msg",
            Format::Mbox => "mbox",
            Format::Pptx => "pptx",
            Format::Odt => "odt",
            Format::Epub => "epub",
            Format::Image => "image",
            Format::Rtf => "rtf",
            Format::Odp => "odp",
        }
    }

    /// True for e-mail messages, whose attachments become documents of their own under the message's
    /// virtual path (`mail.eml!/report.pdf`), as ZIP members do.
    pub fn is_mail(self) -> bool {
        matches!(self, Format::Eml | Format::Msg)
    }

    /// True for the spreadsheet formats read through calamine.
    pub fn is_spreadsheet(self) -> bool {
        matches!(self, Format::Xlsx | Format::Xlsm | Format::Xlsb | Format::Xls | Format::Ods)
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
