//! The supervisor's end of a zygote's control socket, or of a command job's relay: a Unix
//! SOCK_SEQPACKET socket, so every message keeps its boundaries, with file descriptors carried
//! as SCM_RIGHTS.

use std::io::{self, IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{BorrowedFd, OwnedFd};

use rustix::net::{
    recvmsg, sendmsg, socketpair, AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage,
    RecvFlags, ReturnFlags, SendAncillaryBuffer, SendAncillaryMessage, SendFlags, SocketFlags,
    SocketType,
};
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

/// Largest message either side sends (the zygote's replies are small JSON objects).
const MAX_MESSAGE: usize = 1 << 16;
const MAX_FDS: usize = 8;

pub(crate) struct SeqPacket {
    fd: AsyncFd<OwnedFd>,
}

/// A message received with the descriptors that came with it.
pub(crate) struct Received {
    pub data: Vec<u8>,
    pub fds: Vec<OwnedFd>,
}

impl SeqPacket {
    /// A connected pair: ours (non-blocking, registered with tokio) and the peer's end to hand
    /// to the child process (blocking, close-on-exec until the spawn dup2s it).
    pub fn pair() -> io::Result<(SeqPacket, OwnedFd)> {
        let (ours, theirs) = socketpair(
            AddressFamily::UNIX,
            SocketType::SEQPACKET,
            SocketFlags::CLOEXEC,
            None,
        )?;
        rustix::io::ioctl_fionbio(&ours, true)?;
        // SAFETY: `ours` is a freshly created descriptor owned by nothing else, so no other
        // handle can close or reuse it while tokio's reactor watches it.
        let fd = unsafe { AsyncFd::register(ours) }.map_err(io::Error::from)?;
        Ok((SeqPacket { fd }, theirs))
    }

    /// Connects to the listening socket at `path` (non-blocking, registered with tokio).
    pub fn connect(path: &std::path::Path) -> io::Result<SeqPacket> {
        let fd = rustix::net::socket_with(
            AddressFamily::UNIX,
            SocketType::SEQPACKET,
            SocketFlags::CLOEXEC,
            None,
        )?;
        rustix::net::connect(&fd, &rustix::net::SocketAddrUnix::new(path)?)?;
        rustix::io::ioctl_fionbio(&fd, true)?;
        // SAFETY: as in `pair`: a fresh descriptor nothing else owns.
        let fd = unsafe { AsyncFd::register(fd) }.map_err(io::Error::from)?;
        Ok(SeqPacket { fd })
    }

    pub async fn send(&self, data: &[u8], fds: &[BorrowedFd<'_>]) -> io::Result<()> {
        self.fd
            .async_io(Interest::WRITABLE, |fd| {
                let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
                let mut control = SendAncillaryBuffer::new(&mut space);
                if !fds.is_empty() && !control.push(SendAncillaryMessage::ScmRights(fds)) {
                    return Err(io::Error::other("too many descriptors for one message"));
                }
                let sent = sendmsg(fd, &[IoSlice::new(data)], &mut control, SendFlags::NOSIGNAL)?;
                if sent != data.len() {
                    return Err(io::Error::other("short write on a seqpacket socket"));
                }
                Ok(())
            })
            .await
    }

    /// The next message, or `None` once the peer has closed its end.
    pub async fn recv(&self) -> io::Result<Option<Received>> {
        self.fd
            .async_io(Interest::READABLE, |fd| {
                let mut buf = vec![0u8; MAX_MESSAGE];
                let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
                let mut control = RecvAncillaryBuffer::new(&mut space);
                let msg = recvmsg(
                    fd,
                    &mut [IoSliceMut::new(&mut buf)],
                    &mut control,
                    RecvFlags::CMSG_CLOEXEC,
                )?;
                let mut fds = Vec::new();
                for message in control.drain() {
                    if let RecvAncillaryMessage::ScmRights(received) = message {
                        fds.extend(received);
                    }
                }
                if msg
                    .flags
                    .intersects(ReturnFlags::TRUNC | ReturnFlags::CTRUNC)
                {
                    return Err(io::Error::other("truncated message"));
                }
                buf.truncate(msg.bytes);
                Ok((buf, fds))
            })
            .await
            .map(|(data, fds)| (!data.is_empty()).then_some(Received { data, fds }))
    }
}
