import CCurl
import CShims
import Foundation

/// One libcurl transfer: what to send, set on an easy handle when its turn comes (`prepare`), and
/// run by the client's `TransferLoop`.
struct Transfer: Sendable {
    struct Outcome: Sendable {
        let status: Int
        let headers: [(name: String, value: String)]
        let body: Data
    }

    let method: String
    let url: String
    let headers: [(name: String, value: String)]
    let body: Data?
    let connectTimeout: Duration
    let maxResponseBytes: Int
    let caBundlePath: String?
    var destinations: DestinationPolicy = .any
    /// The `CURLOPT_RESOLVE` entry that pins the host to its checked addresses (`Destination.pin`),
    /// resolved before the transfer was queued: the loop's thread never waits for DNS.
    var pin: String?

    /// Sets the transfer's options on `easy` (cleared first; the multi keeps the connections); the
    /// result is handed to `finished` when `ActiveTransfer.finish` runs.
    func prepare(
        on easy: EasyHandle, timeout: Duration,
        finished: @escaping @Sendable (Result<Outcome, HTTPClientError>) -> Void
    ) throws -> ActiveTransfer {
        curl_easy_reset(easy.pointer)
        let active = ActiveTransfer(easy: easy, maxResponseBytes: maxResponseBytes, finished: finished)
        if let pin { active.resolveList = curl_slist_append(nil, pin) }
        active.headerList = requestHeaderList()
        var options = EasyOptions(handle: easy.pointer)
        setRequest(
            &options, timeout: timeout, errorBuffer: active.errorBuffer, headerList: active.headerList,
            resolveList: active.resolveList)
        setResponseCallbacks(&options, sink: Unmanaged.passUnretained(active.sink).toOpaque())
        // An empty body has no address of its own; libcurl reads none of its zero bytes.
        setMethodAndBody(&options, emptyBody: UnsafeMutableRawPointer(active.errorBuffer))
        guard options.allAccepted else { throw HTTPClientError(.transport, "libcurl refused an option") }
        return active
    }

    /// The caller's headers as libcurl's list; the caller frees it.
    private func requestHeaderList() -> UnsafeMutablePointer<curl_slist>? {
        var headerList: UnsafeMutablePointer<curl_slist>?
        for header in headers {
            headerList = curl_slist_append(headerList, "\(header.name): \(header.value)")
        }
        // libcurl adds "Expect: 100-continue" to larger POSTs; upstream APIs gain nothing from it.
        return curl_slist_append(headerList, "Expect:")
    }

    /// Where the request goes and how: the URL and its checked address, TLS, timeouts, headers.
    @inline(__always)
    private func setRequest(
        _ options: inout EasyOptions, timeout: Duration, errorBuffer: UnsafeMutablePointer<CChar>?,
        headerList: UnsafeMutablePointer<curl_slist>?, resolveList: UnsafeMutablePointer<curl_slist>?
    ) {
        let handle = options.handle
        options.set(rg_curl_setopt_string(handle, CURLOPT_URL, url))
        options.set(rg_curl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https"))
        options.set(rg_curl_setopt_long(handle, CURLOPT_NOSIGNAL, 1))
        options.set(rg_curl_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, 1))
        options.set(rg_curl_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, 2))
        if let caBundlePath { options.set(rg_curl_setopt_string(handle, CURLOPT_CAINFO, caBundlePath)) }
        options.set(rg_curl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0))
        options.set(rg_curl_setopt_long(handle, CURLOPT_TIMEOUT_MS, Self.milliseconds(timeout)))
        options.set(
            rg_curl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(min(connectTimeout, timeout))))
        options.set(rg_curl_setopt_string(handle, CURLOPT_ACCEPT_ENCODING, ""))
        options.set(rg_curl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer))
        options.set(rg_curl_setopt_slist(handle, CURLOPT_HTTPHEADER, headerList))
        if resolveList != nil { options.set(rg_curl_setopt_slist(handle, CURLOPT_RESOLVE, resolveList)) }
        if destinations.checksHere {
            // A proxy from the environment would resolve the name again, elsewhere, or reach the
            // checked address from its own network: none for checked destinations.
            options.set(rg_curl_setopt_string(handle, CURLOPT_PROXY, ""))
        }
    }

    /// The response's headers and body go to `sink` (a `ResponseSink` the caller keeps alive).
    @inline(__always)
    private func setResponseCallbacks(_ options: inout EasyOptions, sink: UnsafeMutableRawPointer) {
        let handle = options.handle
        options.set(rg_curl_setopt_write_function(handle, CURLOPT_WRITEFUNCTION, writeBody))
        options.set(rg_curl_setopt_pointer(handle, CURLOPT_WRITEDATA, sink))
        options.set(rg_curl_setopt_write_function(handle, CURLOPT_HEADERFUNCTION, writeHeader))
        options.set(rg_curl_setopt_pointer(handle, CURLOPT_HEADERDATA, sink))
    }

    @inline(__always)
    private func setMethodAndBody(_ options: inout EasyOptions, emptyBody: UnsafeMutableRawPointer) {
        let handle = options.handle
        if method == "HEAD" {
            options.set(rg_curl_setopt_long(handle, CURLOPT_NOBODY, 1))
        } else if method != "GET" {
            options.set(rg_curl_setopt_string(handle, CURLOPT_CUSTOMREQUEST, method))
        }
        guard let body else { return }
        options.set(rg_curl_setopt_off_t(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)))
        body.withUnsafeBytes { raw in
            // COPYPOSTFIELDS copies, so the bytes need not outlive this call.
            options.set(
                rg_curl_setopt_pointer(
                    handle, CURLOPT_COPYPOSTFIELDS,
                    raw.baseAddress.map { UnsafeMutableRawPointer(mutating: $0) } ?? emptyBody))
        }
    }

    static func error(for code: CURLcode, reason: String, sink: ResponseSink) -> HTTPClientError {
        switch code {
        case CURLE_WRITE_ERROR where sink.exceededLimit:
            return HTTPClientError(.responseTooLarge, "response body exceeded \(sink.limit) bytes")
        case CURLE_OPERATION_TIMEDOUT:
            return HTTPClientError(.timeout, reason)
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            return HTTPClientError(.connectFailed, reason)
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CONNECT_ERROR, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CERTPROBLEM,
            CURLE_SSL_CIPHER, CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH:
            return HTTPClientError(.tlsFailure, reason)
        case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL:
            return HTTPClientError(.invalidURL, reason)
        default:
            return HTTPClientError(.transport, reason)
        }
    }

    static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return max(1, Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000))
    }
}

/// A transfer under way: what libcurl reads and writes until it finishes (header lists, the error
/// buffer, the response sink) lives here, and is freed with it.
final class ActiveTransfer {
    let easy: EasyHandle
    let sink: ResponseSink
    let errorBuffer: UnsafeMutablePointer<CChar>
    var headerList: UnsafeMutablePointer<curl_slist>?
    var resolveList: UnsafeMutablePointer<curl_slist>?
    private let finished: @Sendable (Result<Transfer.Outcome, HTTPClientError>) -> Void

    init(
        easy: EasyHandle, maxResponseBytes: Int,
        finished: @escaping @Sendable (Result<Transfer.Outcome, HTTPClientError>) -> Void
    ) {
        self.easy = easy
        self.finished = finished
        sink = ResponseSink(limit: maxResponseBytes)
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
    }

    deinit {
        curl_slist_free_all(headerList)
        curl_slist_free_all(resolveList)
        errorBuffer.deallocate()
    }

    /// Hands the outcome of a transfer libcurl ended with `code` to its caller.
    func finish(_ code: CURLcode) {
        guard code == CURLE_OK else {
            let detail = String(cString: errorBuffer)
            let reason = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
            return finished(.failure(Transfer.error(for: code, reason: reason, sink: sink)))
        }
        var status = 0
        _ = rg_curl_getinfo_long(easy.pointer, CURLINFO_RESPONSE_CODE, &status)
        finished(.success(Transfer.Outcome(status: status, headers: sink.headers, body: sink.body)))
    }
}

/// Options set on one easy handle; a refused one fails the transfer before it starts.
private struct EasyOptions {
    let handle: UnsafeMutableRawPointer
    private(set) var allAccepted = true

    @inline(__always)
    mutating func set(_ result: CURLcode) { allAccepted = allAccepted && result == CURLE_OK }
}

/// Collects one response: headers of the final status line and the body, up to a limit.
final class ResponseSink {
    let limit: Int
    var body = Data()
    var headers: [(name: String, value: String)] = []
    var exceededLimit = false

    init(limit: Int) { self.limit = limit }
}

private let writeBody: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
    data, size, count, context in
    guard let data, let context else { return 0 }
    let sink = Unmanaged<ResponseSink>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    if sink.body.count + length > sink.limit {
        sink.exceededLimit = true
        return 0  // anything but `length` makes libcurl abort with CURLE_WRITE_ERROR
    }
    sink.body.append(UnsafeRawPointer(data).assumingMemoryBound(to: UInt8.self), count: length)
    return length
}

private let writeHeader: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
    data, size, count, context in
    guard let data, let context else { return 0 }
    let sink = Unmanaged<ResponseSink>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    switch ResponseHeaderLine(UnsafeRawBufferPointer(start: data, count: length)) {
    case .status: sink.headers = []  // a new response (after 100 Continue): keep only the final one's headers
    case .field(let name, let value): sink.headers.append((name, value))
    case .other: break
    }
    return length
}
