import CMicroHTTPD
import CShims
import Foundation

/// The request lifecycle, called on libmicrohttpd threads: the head is judged as soon as it has
/// arrived, the body collected, then the connection suspended while the async Swift responder
/// runs, and resumed to send the response.
extension HTTPServer {
    /// A connection was accepted: its first request's receive clock starts now.
    func connectionStarted(_ connection: OpaquePointer, socketContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>) {
        let watch = ConnectionWatch(descriptor: rg_mhd_connection_fd(connection))
        watch.beginReceiving(within: receiveTimeout)
        socketContext.pointee = Unmanaged.passRetained(watch).toOpaque()  // released in connectionClosed
    }

    func connectionClosed(socketContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>) {
        guard let pointer = socketContext.pointee else { return }
        let watch = Unmanaged<ConnectionWatch>.fromOpaque(pointer)
        watch.takeUnretainedValue().connectionClosed()
        watch.release()
        socketContext.pointee = nil
    }

    /// A request line has arrived (the head may still be on its way): its state is created here,
    /// and a later request on a kept-alive connection starts its receive clock.
    /// `encodesNUL`: the raw request line holds `%00`, which libmicrohttpd's decoding would turn
    /// into the end of a C string, silently cutting the path; such a request is refused.
    func requestLineArrived(on connection: OpaquePointer, target: String? = nil) -> UnsafeMutableRawPointer {
        let watch = Self.watch(of: connection)
        watch?.beginReceiving(within: receiveTimeout)
        let state = RequestState(watch: watch)
        state.encodesNUL = target?.contains("%00") ?? false
        state.rawTarget = target
        return Unmanaged.passRetained(state).toOpaque()  // released in requestCompleted
    }

    func handle(
        connection: OpaquePointer, url: String, method: String, upload: UnsafePointer<CChar>?,
        uploadSize: UnsafeMutablePointer<Int>, requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        if requestContext.pointee == nil {  // no request-line callback ran (it always should)
            requestContext.pointee = Unmanaged.passRetained(RequestState(watch: Self.watch(of: connection))).toOpaque()
        }
        guard let pointer = requestContext.pointee else { return MHD_Result.NO }
        let request = Unmanaged<RequestState>.fromOpaque(pointer).takeUnretainedValue()

        if !request.headSeen {
            // First call for this request: headers are complete, no body has been read yet.
            request.headSeen = true
            request.request = Self.readHead(connection: connection, url: url, method: method)
            if let target = request.rawTarget { request.request.target = target }
            return judgeHead(of: request, on: connection)
        }

        if uploadSize.pointee > 0 {
            // Past the receive deadline, stop reading (the deadline thread is cutting the connection).
            if request.watch?.hasExpired == true { return MHD_Result.NO }
            if !request.tooLarge, let upload {
                if request.request.body.count + uploadSize.pointee > configuration.maxBodyBytes {
                    request.tooLarge = true
                    request.request.body = Data()
                } else {
                    request.request.body.append(
                        UnsafeRawPointer(upload).assumingMemoryBound(to: UInt8.self), count: uploadSize.pointee)
                }
            }
            uploadSize.pointee = 0  // consumed (or discarded when too large)
            return MHD_Result.YES
        }

        if let response = request.takeResponse() {
            return queue(response, on: connection, for: request.request.method)
        }
        guard !request.dispatched else { return MHD_Result.YES }  // spurious call while the handler runs
        guard request.watch?.finishReceiving() ?? true else { return MHD_Result.NO }
        if request.tooLarge {
            return queue(refusal(payloadTooLarge, to: request), on: connection, for: request.request.method)
        }
        guard requestStarted() else {
            // A keep-alive connection's next request after the daemon began stopping.
            return queue(refusal(serverStopping, to: request), on: connection, for: request.request.method)
        }
        request.dispatched = true
        MHD_suspend_connection(connection)
        let responder = self.responder
        let connectionAddress = UInt(bitPattern: connection)
        Task(executorPreference: responder.handlerExecutor) {
            let response = await responder.respond(to: request.request)
            request.store(response)
            // Resuming makes libmicrohttpd call `handle` again, which queues the stored response.
            // The request stays in flight until libmicrohttpd reports it sent (requestCompleted).
            MHD_resume_connection(OpaquePointer(bitPattern: connectionAddress))
        }
        return MHD_Result.YES
    }

    /// Answers from the head alone when it settles the matter (bad method, no route, the route's
    /// header check, a declared body over the cap): libmicrohttpd then closes the connection
    /// without reading a byte of the body.
    private func judgeHead(of request: RequestState, on connection: OpaquePointer) -> MHD_Result {
        var answer =
            request.encodesNUL
            ? HTTPError(status: 400, code: "INVALID_FIELD", message: "the request target contains an encoded NUL (%00)")
                .response
            : responder.earlyResponse(to: &request.request)
        if answer == nil, let declared = request.request.headers["Content-Length"].flatMap(Int.init),
            declared > configuration.maxBodyBytes
        {
            request.tooLarge = true
            answer = payloadTooLarge
        }
        guard let answer else { return MHD_Result.YES }
        guard request.watch?.finishReceiving() ?? true else { return MHD_Result.NO }
        return queue(refusal(answer, to: request), on: connection, for: request.request.method)
    }

    private var serverStopping: HTTPResponse {
        var response = HTTPError(
            status: 503, code: "SHUTTING_DOWN", message: "this instance is shutting down; safe to retry"
        ).response
        response.headers.replace("Retry-After", "1")
        return response
    }

    private var payloadTooLarge: HTTPResponse {
        HTTPError(
            status: 413, code: "PAYLOAD_TOO_LARGE",
            message: "request body is larger than \(configuration.maxBodyBytes) bytes"
        ).response
    }

    /// A response given without reading the body: it carries a request id and closes the connection.
    private func refusal(_ response: HTTPResponse, to request: RequestState) -> HTTPResponse {
        var response = response
        response.headers.replace("X-Request-Id", Responder.requestID(from: request.request.headers["X-Request-Id"]))
        response.headers.replace("Connection", "close")
        return response
    }

    private func queue(_ response: HTTPResponse, on connection: OpaquePointer, for method: String) -> MHD_Result {
        let created: OpaquePointer?
        if method == "HEAD", response.body.isEmpty,
            let length = response.headers["Content-Length"].flatMap(UInt64.init), length > 0
        {
            // The size GET's body would have, with no body: libmicrohttpd sends the header and,
            // for HEAD, never asks the reader for content.
            created = MHD_create_response_from_callback(length, 1024, noContent, nil, nil)
        } else if let stream = response.stream {
            // Chunked, of unknown length (MHD_SIZE_UNKNOWN); the response holds the stream
            // until libmicrohttpd frees it (`streamedBodyReleased`).
            stream.attach(to: connection)
            created = MHD_create_response_from_callback(
                UInt64.max, 64 * 1024, streamedBodyReader, Unmanaged.passRetained(stream).toOpaque(),
                streamedBodyReleased)
        } else {
            created = response.body.withUnsafeBytes { raw in
                MHD_create_response_from_buffer(
                    raw.count, UnsafeMutableRawPointer(mutating: raw.baseAddress), .RESPMEM_MUST_COPY)
            }
        }
        guard let mhdResponse = created else { return MHD_Result.NO }
        defer { MHD_destroy_response(mhdResponse) }
        for field in response.headers where !HTTPHeaders.sameName(field.name, "Content-Length") {
            // libmicrohttpd sets Content-Length itself
            _ = MHD_add_response_header(mhdResponse, field.name, field.value)
        }
        if isDraining {
            _ = MHD_add_response_header(mhdResponse, "Connection", "close")
        }
        return MHD_queue_response(connection, UInt32(response.status), mhdResponse)
    }

    private static func watch(of connection: OpaquePointer) -> ConnectionWatch? {
        rg_mhd_socket_context(connection).map { Unmanaged<ConnectionWatch>.fromOpaque($0).takeUnretainedValue() }
    }

    private static func readHead(connection: OpaquePointer, url: String, method: String) -> HTTPRequest {
        let collector = ValueCollector()
        let context = Unmanaged.passUnretained(collector).toOpaque()
        withExtendedLifetime(collector) {
            _ = MHD_get_connection_values(connection, .HEADER_KIND, collectValue, context)
            collector.collectingQuery = true
            _ = MHD_get_connection_values(connection, .GET_ARGUMENT_KIND, collectValue, context)
        }
        var addressBuffer = [CChar](repeating: 0, count: 64)
        let remote =
            rg_mhd_client_address(connection, &addressBuffer, addressBuffer.count) == 0
            ? String(decoding: addressBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : nil
        return HTTPRequest(
            method: method, path: url, query: collector.query, headers: collector.headers, remoteAddress: remote)
    }

    /// libmicrohttpd is done with the request (response sent, or the connection failed):
    /// release the state retained in `requestLineArrived` and, if a handler ran, leave the in-flight count.
    func requestCompleted(_ requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) {
        guard let requestContext, let pointer = requestContext.pointee else { return }
        let request = Unmanaged<RequestState>.fromOpaque(pointer)
        let state = request.takeUnretainedValue()
        if state.dispatched { requestFinished() }
        // A request that failed while arriving must not leave its clock running.
        _ = state.watch?.finishReceiving()
        request.release()
        requestContext.pointee = nil
    }
}

/// The body reader of a HEAD response; libmicrohttpd never calls it, as HEAD sends no body.
private let noContent: MHD_ContentReaderCallback = { _, _, _, _ in
    -2  // MHD_CONTENT_READER_END_WITH_ERROR
}
