/**
 * collectPiAttachments of 0.7.3 over rtsandboxd: the daemon downloads a
 * message's files with its controlled fetch and writes them into the
 * channel's attachments/ through its file guard (exclusive, no-follow);
 * this side prepares up to four images from the saved bytes.
 */
import * as fs from "node:fs";
import * as path from "node:path";

import type { Link } from "./link.js";
import type { AttachmentFailure, AttachmentRef, InboundMessage, StoredAttachment, TurnAttachments } from "./core.js";
import type { PiImage } from "./protocol.js";
import { channelSegment, sharedLink } from "./link.js";
import { PiSandboxRuntime, runtimes } from "./runtime.js";

export interface PiAttachmentOptions {
	/** Turns an image's bytes into what the model takes. */
	prepareImage(data: Uint8Array, mimeType: string): Promise<PiImage>;
	/** Refused: rtsandboxd's controlled fetch downloads every file. */
	fetchImpl?: typeof fetch;
	signal?: AbortSignal;
	/** The wording of a failure shown to the guest; undefined keeps the default. */
	describeFailure?(error: unknown): string | undefined;
	/** rtsandboxd's control socket, when no PiSandboxRuntime of this process owns dir. */
	socket?: string;
}

const FILE_BYTES_MAX = 25 * 1024 * 1024;
const CANDIDATES_MAX = 20;
const IMAGES_MAX = 4;
const IMAGE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"];
const MESSAGE_ID = /^[a-zA-Z0-9_-]{1,100}$/;

/** A failure whose text is already fit to show. */
class AttachmentRefused extends Error {}

interface Candidate {
	ref: AttachmentRef;
	index: number;
	fromReference: boolean;
}

interface Saved {
	index: number;
	reference: boolean;
	name: string;
	file: string;
	size: number;
	contentType?: string;
}

/** The link and state directory that own dir as message.channel's attachments/. */
async function owner(message: InboundMessage, dir: string, socket?: string): Promise<{ link: Link; dir: string }> {
	const want = path.resolve(dir);
	const mine = [...(runtimes as Set<PiSandboxRuntime>)].filter((r) => socket === undefined || r.socket === socket);
	let expected: string | undefined;
	let link: Link | undefined;
	for (const r of mine) {
		const own = path.join(r.workspaceOf(message.channel), "attachments");
		if (own === want) {
			await r.ready();
			return { link: r.link, dir: r.attachmentDir(message.channel) };
		}
		expected ??= own;
		link ??= r.link;
	}
	if (link === undefined) {
		link = sharedLink(socket);
		const config = await link.readConfig();
		expected = path.join(path.resolve(config.state_dir), channelSegment(message.channel), "workspace", "attachments");
		if (expected === want) return { link, dir: want };
	}
	throw new Error(
		`collectPiAttachments: rtsandboxd at ${link.socket} writes ${message.channel}'s attachments only to ${expected}, not ${want}: pass runtime.attachmentDir(channel)`,
	);
}

/** The saved file's bytes, read without following a link the guest planted. */
function readSaved(file: string, size: number): Uint8Array {
	const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
	try {
		const st = fs.fstatSync(fd);
		if (!st.isFile() || st.size !== size || size > FILE_BYTES_MAX) throw new Error("the saved file changed");
		const buf = Buffer.alloc(size);
		let off = 0;
		while (off < size) {
			const n = fs.readSync(fd, buf, off, size - off, off);
			if (n === 0) throw new Error("the saved file changed");
			off += n;
		}
		return buf;
	} finally {
		fs.closeSync(fd);
	}
}

/** PNG, JPEG, GIF or WebP by their first bytes, for a file whose type nobody gave. */
function sniff(data: Uint8Array): string | undefined {
	const at = (i: number, ...b: number[]) => b.every((v, k) => data[i + k] === v);
	if (at(0, 0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return "image/png";
	if (at(0, 0xff, 0xd8, 0xff)) return "image/jpeg";
	if (at(0, 0x47, 0x49, 0x46, 0x38)) return "image/gif";
	if (at(0, 0x52, 0x49, 0x46, 0x46) && at(8, 0x57, 0x45, 0x42, 0x50)) return "image/webp";
	return undefined;
}

/**
 * Download a message's files, and those of the message it answers, into
 * dir (the channel's attachments/, runtime.attachmentDir(channel)); at most
 * 20 files, 25 MiB each and 50 MiB in all.  Up to four images are prepared
 * with prepareImage.  A file that cannot be had is listed in failures.
 */
export async function collectPiAttachments(
	message: InboundMessage,
	dir: string,
	options: PiAttachmentOptions,
): Promise<TurnAttachments> {
	if (options.fetchImpl !== undefined)
		throw new Error(
			"fetchImpl is not supported: rtsandboxd downloads attachments with its controlled fetch; leave fetchImpl out",
		);
	const { link, dir: where } = await owner(message, dir, options.socket);
	const files: StoredAttachment[] = [];
	const failures: AttachmentFailure[] = [];
	const images: PiImage[] = [];
	const describe = (error: unknown): string =>
		options.describeFailure?.(error) ??
		(error instanceof AttachmentRefused ? error.message : `download failed: ${String(error)}`);
	const candidates: Candidate[] = [
		...message.attachments.map((ref, index) => ({ ref, index, fromReference: false })),
		...(message.reference?.attachments ?? []).map((ref, index) => ({ ref, index, fromReference: true })),
	];
	const fail = (c: Candidate, error: unknown): void => {
		failures.push({ name: c.ref.name, reason: describe(error), fromReference: c.fromReference });
	};
	const send: Candidate[] = [];
	for (const [order, c] of candidates.entries()) {
		if (order >= CANDIDATES_MAX) fail(c, new AttachmentRefused("too many attachments"));
		else if (c.ref.size > FILE_BYTES_MAX) fail(c, new AttachmentRefused(`larger than 25 MB (${c.ref.size} bytes)`));
		else if (!MESSAGE_ID.test(message.messageId)) fail(c, new Error("Invalid message id"));
		else send.push(c);
	}
	if (send.length === 0) return { files, failures, images };
	options.signal?.throwIfAborted();
	const wire = (c: Candidate) => {
		const o: Record<string, unknown> = { url: c.ref.url, name: c.ref.name };
		if (Number.isSafeInteger(c.ref.size) && c.ref.size >= 0) o.size = c.ref.size;
		if (typeof c.ref.contentType === "string" && c.ref.contentType !== "") o.contentType = c.ref.contentType;
		return o;
	};
	const params: Record<string, unknown> = {
		channel: message.channel,
		messageId: message.messageId,
		attachments: send.filter((c) => !c.fromReference).map(wire),
	};
	const refs = send.filter((c) => c.fromReference);
	if (refs.length > 0) params.reference = { attachments: refs.map(wire) };
	const call = link.conn.call<{ saved: Saved[]; failed: { index: number; reference: boolean; reason: string }[] }>(
		"attachments.fetch",
		params,
	);
	const onAbort = (): void => call.cancel();
	options.signal?.addEventListener("abort", onAbort, { once: true });
	let answer: Awaited<typeof call.result>;
	try {
		answer = await call.result;
	} finally {
		options.signal?.removeEventListener("abort", onAbort);
	}
	const find = (index: number, reference: boolean) =>
		send.find((c) => c.index === index && c.fromReference === reference);
	for (const f of answer.failed ?? []) {
		const c = find(f.index, f.reference);
		if (c === undefined) continue;
		const http = /^HTTP status (\d+)$/.exec(f.reason);
		fail(c, http !== null ? new AttachmentRefused(`download failed with HTTP ${http[1]}`) : new Error(f.reason));
	}
	for (const s of answer.saved ?? []) {
		const c = find(s.index, s.reference);
		if (c === undefined) continue;
		const file = path.join(where, s.file);
		let data: Uint8Array | undefined;
		let contentType = s.contentType || c.ref.contentType;
		const mimeOf = (t: string) => t.split(";")[0]?.trim().toLowerCase() ?? "";
		const wantsImage = images.length < IMAGES_MAX && (contentType === undefined || IMAGE_TYPES.includes(mimeOf(contentType)));
		if (wantsImage) {
			try {
				data = readSaved(file, s.size);
			} catch {
				data = undefined;
			}
			if (contentType === undefined && data !== undefined) contentType = sniff(data);
		}
		contentType ||= "application/octet-stream";
		files.push({
			name: c.ref.name,
			file: s.file,
			path: file,
			contentType,
			size: s.size,
			fromReference: c.fromReference,
		});
		const mime = mimeOf(contentType);
		if (images.length < IMAGES_MAX && IMAGE_TYPES.includes(mime)) {
			try {
				if (data === undefined) throw new Error("the saved image cannot be read");
				images.push(await options.prepareImage(data, mime));
			} catch (error) {
				failures.push({
					name: c.ref.name,
					reason: options.describeFailure?.(error) ?? "the image could not be decoded",
					fromReference: c.fromReference,
				});
			}
		}
	}
	return { files, failures, images };
}
