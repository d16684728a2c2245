// The coded errors of write_file (SPEC §9). The http layer maps `code` and `status` to the error
// body; `field` names the query parameter at fault.

export type WriteFileErrorCode = 'invalid_input' | 'payload_too_large' | 'internal_error' | 'bad_request';

export class WriteFileError extends Error {
  override name = 'WriteFileError';

  constructor(
    readonly code: WriteFileErrorCode,
    readonly status: 400 | 409 | 413 | 500,
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }

  /** 400: a bad path or mode, found before anything touched the disk. */
  static invalid(field: 'path' | 'mode', message: string): WriteFileError {
    return new WriteFileError('invalid_input', 400, `${field} ${message}`, field);
  }

  /** 409: the path or one of its parents is a directory where a file is needed, or the reverse. */
  static conflict(message: string): WriteFileError {
    return new WriteFileError('invalid_input', 409, message, 'path');
  }

  static tooLarge(limit: number): WriteFileError {
    return new WriteFileError('payload_too_large', 413, `the file is larger than the ${limit}-byte upload limit`);
  }

  /** The upload stopped before its end (the client went away). */
  static aborted(): WriteFileError {
    return new WriteFileError('bad_request', 400, 'the upload was aborted before its end');
  }

  static io(message: string): WriteFileError {
    return new WriteFileError('internal_error', 500, message);
  }
}
