import CCurl
import CShims
import Foundation

/// Which resolved addresses a request may connect to. The host is resolved on the transfer's own
/// thread, every address is checked, and the connection is pinned to a checked one
/// (`CURLOPT_RESOLVE`), so a second DNS answer cannot swap in another (DNS rebinding).
package enum DestinationPolicy: Sendable, Equatable {
    /// Whatever the host resolves to (the default; configured upstreams such as Apple and Google).
    case any
    /// Only public unicast addresses: no loopback, private, link-local (cloud metadata),
    /// carrier-grade NAT, multicast or unspecified ones (game servers' own URLs).
    case publicOnly
}

enum Destination {
    /// `host:port:address` for CURLOPT_RESOLVE, or a refusal.
    static func pin(url: String, policy: DestinationPolicy) throws -> String? {
        guard policy == .publicOnly else { return nil }
        guard let components = URLComponents(string: url), let host = components.host, !host.isEmpty else {
            throw HTTPClientError(.invalidURL, "cannot read the host of \(url)")
        }
        let bareHost = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        let port = components.port ?? (components.scheme?.lowercased() == "https" ? 443 : 80)
        let addresses = try resolve(bareHost)
        guard let allowed = addresses.first(where: PublicAddress.isPublic) else {
            throw HTTPClientError(.destinationRefused,
                                  "\(bareHost) resolves only to addresses that are not public (\(addresses.prefix(3).joined(separator: ", ")))")
        }
        guard addresses.allSatisfy(PublicAddress.isPublic) else {
            throw HTTPClientError(.destinationRefused, "\(bareHost) resolves to a non-public address among its answers")
        }
        let shownHost = bareHost.contains(":") ? "[\(bareHost)]" : bareHost
        let shownAddress = allowed.contains(":") ? "[\(allowed)]" : allowed
        return "\(shownHost):\(port):\(shownAddress)"
    }

    /// getaddrinfo, on the calling (worker) thread.
    static func resolve(_ host: String) throws -> [String] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &result)
        guard status == 0, let first = result else {
            throw HTTPClientError(.connectFailed, "cannot resolve \(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(first) }
        var addresses: [String] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let entry = cursor {
            var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            if let address = entry.pointee.ai_addr,
               getnameinfo(address, entry.pointee.ai_addrlen, &buffer, socklen_t(buffer.count), nil, 0, NI_NUMERICHOST) == 0 {
                let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                if !addresses.contains(text) { addresses.append(text) }
            }
            cursor = entry.pointee.ai_next
        }
        return addresses
    }
}

/// Public unicast or not, for IPv4 and IPv6 literals (IPv4-mapped IPv6 judged as IPv4).
package enum PublicAddress {
    package static func isPublic(_ address: String) -> Bool {
        var v4 = in_addr()
        if inet_pton(AF_INET, address, &v4) == 1 { return isPublicIPv4(UInt32(bigEndian: v4.s_addr)) }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, address.split(separator: "%").first.map(String.init) ?? address, &v6) == 1 else { return false }
        let bytes = withUnsafeBytes(of: v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xff && bytes[11] == 0xff {
            return isPublicIPv4(UInt32(bytes[12]) << 24 | UInt32(bytes[13]) << 16 | UInt32(bytes[14]) << 8 | UInt32(bytes[15]))
        }
        if bytes.allSatisfy({ $0 == 0 }) { return false }                              // ::
        if bytes[0..<15].allSatisfy({ $0 == 0 }) && bytes[15] == 1 { return false }    // ::1
        if bytes[0] & 0xfe == 0xfc { return false }                                     // fc00::/7 unique local
        if bytes[0] == 0xfe && bytes[1] & 0xc0 == 0x80 { return false }                 // fe80::/10 link-local
        if bytes[0] == 0xff { return false }                                            // multicast
        if bytes[0..<12].allSatisfy({ $0 == 0 }) { return false }                       // IPv4-compatible (deprecated)
        if bytes[0] == 0x20 && bytes[1] == 0x01 && bytes[2] == 0x0d && bytes[3] == 0xb8 { return false }  // documentation
        if bytes[0] == 0x00 && bytes[1] == 0x64 && bytes[2] == 0xff && bytes[3] == 0x9b { return false }  // NAT64 64:ff9b::/96 and ::1/48
        if bytes[0] == 0x20 && bytes[1] == 0x02 { return false }                                          // 6to4 2002::/16 (wraps IPv4)
        if bytes[0] == 0x20 && bytes[1] == 0x01 && bytes[2] == 0x00 && bytes[3] == 0x00 { return false }  // Teredo 2001::/32
        if bytes[0] == 0xfe && bytes[1] & 0xc0 == 0xc0 { return false }                                  // fec0::/10 site-local
        return true
    }

    static func isPublicIPv4(_ value: UInt32) -> Bool {
        func within(_ network: UInt32, _ bits: UInt32) -> Bool { value >> (32 - bits) == network >> (32 - bits) }
        let blocked: [(UInt32, UInt32)] = [
            (0x0000_0000, 8),   // 0.0.0.0/8 "this network"
            (0x0A00_0000, 8),   // 10/8
            (0x6440_0000, 10),  // 100.64/10 carrier-grade NAT
            (0x7F00_0000, 8),   // 127/8 loopback
            (0xA9FE_0000, 16),  // 169.254/16 link-local, cloud metadata
            (0xAC10_0000, 12),  // 172.16/12
            (0xC000_0000, 24),  // 192.0.0/24 protocol assignments
            (0xC000_0200, 24),  // 192.0.2/24 documentation
            (0xC0A8_0000, 16),  // 192.168/16
            (0xC058_6300, 24),  // 192.88.99/24 6to4 relay anycast
            (0xC612_0000, 15),  // 198.18/15 benchmarking
            (0xC633_6400, 24),  // 198.51.100/24 documentation
            (0xCB00_7100, 24),  // 203.0.113/24 documentation
            (0xE000_0000, 4),   // multicast
            (0xF000_0000, 4),   // reserved, broadcast
        ]
        return !blocked.contains { within($0.0, $0.1) }
    }
}
