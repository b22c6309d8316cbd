import Foundation

/// A self-signed certificate and private key for HTTPS on one machine (`storecast dev`, tests):
/// EC P-256, for `localhost`, 127.0.0.1 and the given hosts, made by the openssl command line.
/// Made once per directory and kept until it is within a week of its 30 days; browsers ask to
/// accept it once (Chromium: `--ignore-certificate-errors` in tests).
public enum SelfSignedCertificate {
    public static let certificateFile = "tls-certificate.pem"
    public static let keyFile = "tls-key.pem"

    /// The certificate's and key's paths in `directory`, made or remade as needed.
    public static func ensure(in directory: String, hosts: [String] = []) throws -> (certificate: String, key: String) {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let certificate = directory + "/" + certificateFile, key = directory + "/" + keyFile
        let names = (["localhost", "127.0.0.1"] + hosts).reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
        let fresh = FileManager.default.fileExists(atPath: key)
            && (try? LocalPostgres.run(["openssl", "x509", "-checkend", "604800", "-noout", "-in", certificate])) != nil
            && ((try? LocalPostgres.run(["openssl", "x509", "-noout", "-ext", "subjectAltName", "-in", certificate])).map { sans in names.allSatisfy { sans.contains($0) } } ?? false)
        if fresh { return (certificate, key) }
        let isAddress: (String) -> Bool = { name in
            name.contains(":") || (name.split(separator: ".", omittingEmptySubsequences: false).count == 4 && name.split(separator: ".").allSatisfy { UInt8($0) != nil })
        }
        let subjectAltName = names.map { isAddress($0) ? "IP:\($0)" : "DNS:\($0)" }.joined(separator: ",")
        do {
            try LocalPostgres.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                                   "-keyout", key, "-out", certificate, "-days", "30", "-subj", "/CN=storecast dev",
                                   "-addext", "subjectAltName=\(subjectAltName)"])
        } catch {
            throw LocalPostgres.Failure(description: "cannot make a self-signed TLS certificate (\(error)); install openssl (apt install openssl) or give the packager --tls-certificate and --tls-key")
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: key)  // the key: its owner's only
        return (certificate, key)
    }
}
